/**
 * A small built UI for tests, written synchronously (before a test file's server Layer is built):
 * an index.html and Vite-style hashed assets that carry the serve-base placeholder, one file of each
 * kind the server serves, one file too large to keep in memory, and a file beside the bundle that
 * no request may reach. Plus a raw HTTP client that sends a path exactly as written (fetch would
 * resolve "..").
 */
import { Effect } from "effect"
import * as fs from "node:fs"
import * as http from "node:http"
import * as os from "node:os"
import * as path from "node:path"
import { serverUrl } from "../support/server.ts"

export const PLACEHOLDER = "/PREFECT_UI_SERVE_BASE_REPLACE_PLACEHOLDER"

export const INDEX_HTML =
  `<!doctype html><html><head><link rel="manifest" href="${PLACEHOLDER}/site.webmanifest">` +
  `<script type="module" src="${PLACEHOLDER}/assets/index-4f3c2a.js"></script></head>` +
  `<body><div id="app">Fixture UI</div></body></html>`

/** A module that names the placeholder, long enough to be compressed. */
export const APP_JS = `export const base = "${PLACEHOLDER}";\n// ${"x".repeat(1200)}\n`

/** PNG and ICO signatures, a woff2 header: binary content that must come back byte for byte. */
const PNG = Uint8Array.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52])
const ICO = Uint8Array.from([0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 0])
const WOFF2 = Uint8Array.from([0x77, 0x4f, 0x46, 0x32, 0, 1, 0, 0, 0xff, 0xfe])

/** Larger than the in-memory limit: streamed from the copy. */
export const BIG_SIZE = 1536 * 1024

export const FILES: Record<string, string | Uint8Array> = {
  "index.html": INDEX_HTML,
  "assets/index-4f3c2a.js": APP_JS,
  "assets/index-4f3c2a.js.map": `{"version":3,"sources":["${PLACEHOLDER}/src/main.ts"],"mappings":""}`,
  "assets/worker-1b2c3d.mjs": `self.base = "${PLACEHOLDER}"`,
  "assets/index-9a8b7c.css": `body { background: url("${PLACEHOLDER}/assets/logo-77aa.svg"); }`,
  "assets/logo-77aa.svg": `<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"></svg>`,
  "assets/inter-55ee.woff2": WOFF2,
  "assets/big-0c0c.bin": new Uint8Array(BIG_SIZE).map((_, i) => (i * 31) % 251),
  "favicon.ico": ICO,
  "logo.png": PNG,
  "robots.txt": "User-agent: *\nDisallow:\n",
  "site.webmanifest": `{"name":"Fixture","start_url":"${PLACEHOLDER}/"}`,
  "config.json": `{"base":"${PLACEHOLDER}"}`,
  "help/index.html": "<!doctype html><p>help page</p>"
}

export interface Fixture {
  /** The folder holding the bundle and, beside it, secret.txt. */
  readonly root: string
  /** The bundle: what server.ui.static_directory names. */
  readonly dir: string
}

export const makeFixture = (): Fixture => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), "baton-ui-fixture-"))
  const dir = path.join(root, "dist")
  for (const [name, content] of Object.entries(FILES)) {
    const file = path.join(dir, ...name.split("/"))
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, content)
  }
  fs.writeFileSync(path.join(root, "secret.txt"), "not for browsers")
  return { root, dir }
}

export const removeFixture = (fixture: Fixture) => fs.rmSync(fixture.root, { recursive: true, force: true })

export interface RawAnswer {
  readonly status: number
  readonly headers: http.IncomingHttpHeaders
  readonly body: Buffer
}

/** One request with `rawPath` sent as written, the body not decompressed. */
export const rawRequest = (method: string, rawPath: string, headers: Record<string, string> = {}) =>
  Effect.flatMap(serverUrl, (root) =>
    Effect.promise(
      () =>
        new Promise<RawAnswer>((resolve, reject) => {
          const url = new URL(root)
          const req = http.request(
            { host: url.hostname, port: url.port, path: rawPath, method, headers },
            (res) => {
              const chunks: Array<Buffer> = []
              res.on("data", (chunk: Buffer) => chunks.push(chunk))
              res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
              res.on("error", reject)
            }
          )
          req.on("error", reject)
          req.end()
        })
    )
  )

/** What a browser sends when it loads a page. */
export const NAVIGATION = { accept: "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8" }

/** The icons of the fake prefect package's UIs: distinct bytes, to tell which one answered. */
export const PACKAGE_ICONS = {
  v1: Uint8Array.from([0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 1]),
  v1Dark: Uint8Array.from([0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 2]),
  v2: Uint8Array.from([0, 0, 1, 0, 1, 0, 16, 16, 0, 0, 1, 0, 32, 3])
}

/** The index.html of the fake package's UI `version`, naming its asset through the placeholder. */
export const packageIndex = (version: "v1" | "v2") =>
  `<!doctype html><html><head><script type="module" src="${PLACEHOLDER}/assets/app-${version}.js"></script></head>` +
  `<body>Prefect UI ${version}</body></html>`

export interface FakePrefect {
  /** What PYTHONPATH names: the folder holding the package. */
  readonly root: string
  /** The package folder (root/prefect). */
  readonly packageDirectory: string
}

/**
 * A fake installed `prefect` package (an empty __init__.py, so `python3` finds it on PYTHONPATH)
 * holding the built UIs asked for: server/ui (index.html, an asset, ico/favicon.ico and
 * ico/favicon-dark.ico) and server/ui-v2 (index.html, an asset, ico/favicon.ico). Below `parent`
 * (a site-packages folder, say) or in a new temporary folder.
 */
export const makeFakePrefect = (uis: { readonly v1: boolean; readonly v2: boolean }, parent?: string): FakePrefect => {
  const root = parent ?? fs.mkdtempSync(path.join(os.tmpdir(), "baton-fake-prefect-"))
  const packageDirectory = path.join(root, "prefect")
  const files: Record<string, string | Uint8Array> = { "__init__.py": "" }
  if (uis.v1) {
    files["server/ui/index.html"] = packageIndex("v1")
    files["server/ui/assets/app-v1.js"] = `export const base = "${PLACEHOLDER}"`
    files["server/ui/ico/favicon.ico"] = PACKAGE_ICONS.v1
    files["server/ui/ico/favicon-dark.ico"] = PACKAGE_ICONS.v1Dark
  }
  if (uis.v2) {
    files["server/ui-v2/index.html"] = packageIndex("v2")
    files["server/ui-v2/assets/app-v2.js"] = `export const base = "${PLACEHOLDER}"`
    files["server/ui-v2/ico/favicon.ico"] = PACKAGE_ICONS.v2
  }
  for (const [name, content] of Object.entries(files)) {
    const file = path.join(packageDirectory, ...name.split("/"))
    fs.mkdirSync(path.dirname(file), { recursive: true })
    fs.writeFileSync(file, content)
  }
  return { root, packageDirectory }
}
