/**
 * What a UI file is served as: its content type, whether it is worth compressing, how long a
 * browser may cache it, and whether the serve-base placeholder is replaced in it.
 */

const UTF8 = "; charset=utf-8"

const TYPES: Readonly<Record<string, string>> = {
  html: `text/html${UTF8}`,
  htm: `text/html${UTF8}`,
  js: `text/javascript${UTF8}`,
  mjs: `text/javascript${UTF8}`,
  cjs: `text/javascript${UTF8}`,
  css: `text/css${UTF8}`,
  json: "application/json",
  map: "application/json",
  webmanifest: "application/manifest+json",
  txt: `text/plain${UTF8}`,
  md: `text/markdown${UTF8}`,
  csv: `text/csv${UTF8}`,
  xml: "application/xml",
  svg: "image/svg+xml",
  png: "image/png",
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  gif: "image/gif",
  webp: "image/webp",
  avif: "image/avif",
  ico: "image/x-icon",
  bmp: "image/bmp",
  woff: "font/woff",
  woff2: "font/woff2",
  ttf: "font/ttf",
  otf: "font/otf",
  eot: "application/vnd.ms-fontobject",
  wasm: "application/wasm",
  pdf: "application/pdf",
  mp4: "video/mp4",
  webm: "video/webm",
  mp3: "audio/mpeg",
  wav: "audio/wav"
}

/** Files whose text may hold the placeholder (the reference replaces it in html, js, css, json and txt). */
const TEXT = new Set(["html", "htm", "js", "mjs", "cjs", "css", "json", "map", "webmanifest", "txt", "svg", "xml"])

/** Types that shrink when compressed (images, fonts and media already are). */
const COMPRESSIBLE = new Set([...TEXT, "md", "csv", "wasm", "ico", "bmp", "ttf", "otf", "eot"])

export const extensionOf = (path: string): string => {
  const slash = path.lastIndexOf("/")
  const dot = path.lastIndexOf(".")
  return dot > slash + 1 ? path.slice(dot + 1).toLowerCase() : ""
}

export const contentTypeOf = (path: string): string => TYPES[extensionOf(path)] ?? "application/octet-stream"

export const isText = (path: string): boolean => TEXT.has(extensionOf(path))

export const isCompressible = (path: string): boolean => COMPRESSIBLE.has(extensionOf(path))

/** A year: the longest lifetime browsers honour. */
export const IMMUTABLE = "public, max-age=31536000, immutable"

/** Stored, but checked with the server (ETag) before each use. */
export const REVALIDATE = "no-cache"

/**
 * Vite names everything under assets/ by its content hash, so those files never change under their
 * name; anything else (index.html above all, which names the current hashes) is revalidated.
 */
export const cacheControlOf = (path: string): string =>
  path.startsWith("assets/") && extensionOf(path) !== "html" ? IMMUTABLE : REVALIDATE
