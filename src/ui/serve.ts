/**
 * Answers requests for the UI from the bundle's file map: the file a path names (with its content
 * type, cache lifetime, ETag and, when the browser takes it, gzip), index.html for a browser's page
 * navigation that names no file (the UI routes it itself), and a JSON 404 for anything else.
 * Only paths outside the API's base path ever come here.
 */
import { createReadStream } from "node:fs"
import * as fs from "node:fs/promises"
import { promisify } from "node:util"
import * as zlib from "node:zlib"
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import type { Outside } from "../http/edge.ts"
import { notFound } from "../http/responses.ts"
import type { SettingsValue } from "../settings/settings.ts"
import type { UiBundle, UiFile } from "./bundle.ts"
import { landingRoute } from "./landing.ts"
import { defaultUiOf, uiSettingsRoute } from "./ui-settings.ts"

const gzip = promisify(zlib.gzip)

/** Smaller answers are not worth compressing (the reference's GZip middleware threshold). */
const GZIP_MINIMUM = 500

/**
 * First path segments that are the server's, never a UI page, though they lie outside the API's
 * base path: a browser navigating to them gets the 404 it would get without a UI.
 */
const RESERVED = new Set(["api", "docs", "redoc", "openapi.json", "health", "ready", "version", "hello", "metrics", "ui-settings"])


const methodNotAllowed = HttpServerResponse.unsafeJson(
  { detail: "Method Not Allowed" },
  { status: 405, headers: { allow: "GET, HEAD" } }
)

/** A browser loading a page (the address bar, a link, a reload) rather than a script fetching data. */
export const isPageNavigation = (headers: HttpServerRequest.HttpServerRequest["headers"]): boolean => {
  if (headers["sec-fetch-mode"] === "navigate") return true
  const dest = headers["sec-fetch-dest"]
  if (dest === "document" || dest === "iframe") return true
  const accept = headers["accept"]?.toLowerCase() ?? ""
  return accept.includes("text/html") || accept.includes("application/xhtml+xml")
}

/** Whether Accept-Encoding takes gzip (and does not refuse it with q=0). */
export const acceptsGzip = (acceptEncoding: string | undefined): boolean => {
  if (acceptEncoding === undefined) return false
  for (const part of acceptEncoding.split(",")) {
    const [coding, ...params] = part.trim().toLowerCase().split(";")
    if (coding !== "gzip" && coding !== "*") continue
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="))
    return q === undefined || Number(q.slice(2)) > 0
  }
  return false
}

/** If-None-Match against a weak ETag: weak comparison, as the standard asks for GET and HEAD. */
const matchesEtag = (ifNoneMatch: string | undefined, etag: string): boolean => {
  if (ifNoneMatch === undefined) return false
  const opaque = etag.replace(/^W\//, "")
  return ifNoneMatch.split(",").some((tag) => {
    const t = tag.trim()
    return t === "*" || t.replace(/^W\//, "") === opaque
  })
}

/**
 * Decodes a path below the serve base into the bundle's key space; undefined when a segment is
 * malformed or tries to leave its folder (".", "..", an encoded slash or backslash, a NUL).
 */
export const decodeUiPath = (encoded: string): string | undefined => {
  const segments: Array<string> = []
  for (const raw of encoded.split("/")) {
    let segment: string
    try {
      segment = decodeURIComponent(raw)
    } catch {
      return undefined
    }
    if (segment === "." || segment === ".." || /[/\\\0]/.test(segment)) return undefined
    segments.push(segment)
  }
  return segments.join("/")
}

const gzipped = (file: UiFile): Promise<Uint8Array> => {
  if (file.gzipped === undefined) {
    const content = file.body !== undefined ? Promise.resolve(file.body) : fs.readFile(file.absolute)
    file.gzipped = content.then((bytes) => gzip(bytes, { level: 6 })).then((b) => new Uint8Array(b.buffer, b.byteOffset, b.length))
    // A failure is not kept: the next request tries again.
    file.gzipped.catch(() => (file.gzipped = undefined))
  }
  return file.gzipped
}

const serveFile = (request: HttpServerRequest.HttpServerRequest, file: UiFile) => {
  const headers: Record<string, string> = {
    "cache-control": file.cacheControl,
    etag: file.etag,
    "x-content-type-options": "nosniff"
  }
  if (file.compressible) headers["vary"] = "Accept-Encoding"
  if (matchesEtag(request.headers["if-none-match"], file.etag)) {
    return Effect.succeed(HttpServerResponse.empty({ status: 304, headers }))
  }
  if (file.compressible && file.size >= GZIP_MINIMUM && acceptsGzip(request.headers["accept-encoding"])) {
    return Effect.map(Effect.promise(() => gzipped(file)), (body) =>
      HttpServerResponse.uint8Array(body, {
        contentType: file.contentType,
        headers: { ...headers, "content-encoding": "gzip" }
      })
    )
  }
  if (file.body !== undefined) {
    return Effect.succeed(HttpServerResponse.uint8Array(file.body, { contentType: file.contentType, headers }))
  }
  if (request.method === "HEAD") {
    return Effect.succeed(
      HttpServerResponse.empty({
        status: 200,
        headers: { ...headers, "content-type": file.contentType, "content-length": String(file.size) }
      })
    )
  }
  return Effect.sync(() =>
    HttpServerResponse.raw(createReadStream(file.absolute), {
      contentType: file.contentType,
      contentLength: file.size,
      headers
    })
  )
}

/** Icons a browser asks for at the top of a site, which a build may keep in its ico/ folder. */
const FAVICONS = new Set(["favicon.ico", "favicon-dark.ico"])

/** The file a path below a bundle names: a folder's index.html, and a favicon from ico/ when not at the top. */
const lookupIn = (bundle: UiBundle) => (relative: string): UiFile | undefined => {
  if (relative === "" || relative.endsWith("/")) return bundle.files.get(`${relative}index.html`)
  const file = bundle.files.get(relative) ?? bundle.files.get(`${relative}/index.html`)
  return file ?? (FAVICONS.has(relative) ? bundle.files.get(`ico/${relative}`) : undefined)
}

/** Whether `pathname` lies at or below `base`. */
const isBelow = (pathname: string, base: string) => base === "/" || pathname === base || pathname.startsWith(`${base}/`)

/** The UI's answer to a request whose path (`pathname`, without query) lies outside the API. */
export const uiApp = (bundle: UiBundle) => {
  const prefix = bundle.base === "/" ? "/" : `${bundle.base}/`
  const lookup = lookupIn(bundle)
  return (
    request: HttpServerRequest.HttpServerRequest,
    pathname: string
  ): Effect.Effect<HttpServerResponse.HttpServerResponse> => {
    let encoded: string
    if (pathname === bundle.base) encoded = ""
    else if (pathname.startsWith(prefix)) encoded = pathname.slice(prefix.length)
    else return Effect.succeed(notFound)
    const relative = decodeUiPath(encoded)
    if (relative === undefined) return Effect.succeed(notFound)
    const readable = request.method === "GET" || request.method === "HEAD"
    const file = lookup(relative)
    if (file !== undefined) return readable ? serveFile(request, file) : Effect.succeed(methodNotAllowed)
    if (readable && isPageNavigation(request.headers) && !RESERVED.has(pathname.split("/")[1] ?? "")) {
      return serveFile(request, bundle.index)
    }
    return Effect.succeed(notFound)
  }
}

/** The cookie a UI sets when its user switches to the other one. */
export const UI_VERSION_COOKIE = "prefect_ui_version"

/**
 * With both UIs served, a browser opening the serve base itself (the neutral entry point) is sent
 * to the second UI when its saved choice, or else the default UI, is that one: 307 to <base>/v2/.
 */
const preferredUiRedirect = (settings: SettingsValue, bundles: ReadonlyArray<UiBundle>) => {
  const first = bundles.find((bundle) => bundle.version === "v1")
  const second = bundles.find((bundle) => bundle.version === "v2")
  if (first === undefined || second === undefined) return () => undefined
  const entries = new Set([first.base, first.base === "/" ? "/" : `${first.base}/`])
  const fallback = defaultUiOf(settings, ["v1", "v2"])
  return (request: HttpServerRequest.HttpServerRequest, pathname: string): HttpServerResponse.HttpServerResponse | undefined => {
    if (!entries.has(pathname) || (request.method !== "GET" && request.method !== "HEAD") || !isPageNavigation(request.headers)) {
      return undefined
    }
    const saved = request.cookies[UI_VERSION_COOKIE]
    const preferred = saved === "v1" || saved === "v2" ? saved : fallback
    if (preferred !== "v2") return undefined
    const q = request.url.indexOf("?")
    return HttpServerResponse.empty({ status: 307, headers: { location: `${second.base}/${q === -1 ? "" : request.url.slice(q)}` } })
  }
}

/**
 * What the server answers beside the Api: /ui-settings wherever it is asked for, and the UI
 * `bundles` if there are any (each below its base, the deepest first; /favicon.ico at the root from
 * the first one, the one at the serve base), else Baton's own page at the root for a browser.
 */
export const uiOutside = (settings: SettingsValue, bundles: ReadonlyArray<UiBundle>): Outside => {
  const uiSettings = uiSettingsRoute(settings, bundles)
  // The deepest base first: /v2/… is the second UI's even with the default one at /.
  const apps = [...bundles].sort((a, b) => b.base.length - a.base.length).map((bundle) => ({ bundle, serve: uiApp(bundle) }))
  const redirect = preferredUiRedirect(settings, bundles)
  const landing = bundles.length === 0 && settings.server.ui.enabled ? landingRoute(settings) : () => undefined
  const topFavicon = bundles.length === 0 ? undefined : lookupIn(bundles[0]!)
  return {
    first: uiSettings.answer,
    serve: (request, pathname) => {
      const answer = redirect(request, pathname) ?? landing(request, pathname)
      if (answer !== undefined) return Effect.succeed(answer)
      const app = apps.find(({ bundle }) => isBelow(pathname, bundle.base))
      if (app !== undefined) return app.serve(request, pathname)
      const icon = topFavicon !== undefined && FAVICONS.has(pathname.slice(1)) ? topFavicon(pathname.slice(1)) : undefined
      if (icon !== undefined && (request.method === "GET" || request.method === "HEAD")) return serveFile(request, icon)
      return Effect.succeed(notFound)
    }
  }
}
