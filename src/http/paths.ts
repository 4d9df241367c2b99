/** Path helpers the request edge and its neighbours share. */
import { trimEnd } from "../domain/strings.ts"

/** "/v2/api/" → "/v2/api"; "" and "/" → "". */
export const normalizeBasePath = (basePath: string): string => {
  const trimmed = trimEnd(basePath.trim(), "/")
  return trimmed === "" ? "" : trimmed.startsWith("/") ? trimmed : `/${trimmed}`
}

/** The part of `url` below the base path, or undefined when the url is outside it. */
export const stripBasePath = (url: string, basePath: string): string | undefined => {
  if (basePath === "") return url
  if (!url.startsWith(basePath)) return undefined
  const rest = url.slice(basePath.length)
  if (rest === "" || rest.startsWith("?")) return `/${rest}`
  return rest.startsWith("/") ? rest : undefined
}

/** "/flows/" and "/flows" are one route. */
export const stripTrailingSlash = (url: string): string => {
  const q = url.indexOf("?")
  const path = q === -1 ? url : url.slice(0, q)
  if (path.length <= 1 || !path.endsWith("/")) return url
  return trimEnd(path, "/") + (q === -1 ? "" : url.slice(q))
}

/** The path of a request url, without its query. */
export const pathnameOf = (url: string): string => {
  const q = url.indexOf("?")
  return q === -1 ? url : url.slice(0, q)
}
