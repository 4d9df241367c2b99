/**
 * The folder rule, read from the imports of every file under src/: folders import downward only.
 *
 *   settings ← domain ← database ← http (the HTTP kit) ← areas ← api.ts ← handlers ← server.ts ← main.ts, index.ts
 *
 * An area is every other folder (flows, deployments, services, orchestration …); areas may import
 * each other, but never another area's handlers (its http.ts). Handlers (an area's http.ts and
 * *-http.ts) implement the composed Api, so they sit above src/api.ts. Within its own folder a file
 * imports what it needs.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const SRC = path.resolve(import.meta.dirname, "../src")

const files = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    return entry.isDirectory() ? files(full) : entry.name.endsWith(".ts") ? [full] : []
  })

/** Where a file of src/ stands: its folder (or its own name at the top) and its tier. */
const place = (file: string): { readonly folder: string; readonly tier: number; readonly handler: boolean } => {
  const parts = path.relative(SRC, file).split(path.sep)
  const folder = parts.length > 1 ? parts[0]! : parts[0]!.replace(/\.ts$/, "")
  const name = parts.at(-1)!
  const handler = parts.length > 1 && (name === "http.ts" || name.endsWith("-http.ts")) && !["http", "database", "domain", "settings"].includes(folder)
  const tiers: Record<string, number> = { settings: 0, version: 0, domain: 1, database: 2, http: 3, api: 5, server: 7, main: 8, index: 8 }
  return { folder, tier: handler ? 6 : tiers[folder] ?? 4, handler }
}

/** The files under src/ each file imports (relative specifiers only). */
const importsOf = (file: string): Array<string> => {
  const text = fs.readFileSync(file, "utf8")
  const specifiers = [...text.matchAll(/(?:from|import)\s*\(?\s*"(\.[^"]+)"/g)].map((m) => m[1]!)
  return specifiers.map((s) => path.resolve(path.dirname(file), s)).filter((target) => target.startsWith(SRC + path.sep))
}

describe("the folder rule", () => {
  it("every import points down, and no area imports another area's handlers", () => {
    const wrong: Array<string> = []
    for (const file of files(SRC)) {
      const from = place(file)
      for (const target of importsOf(file)) {
        const to = place(target)
        if (to.folder === from.folder) continue
        const upward = to.tier > from.tier || (to.tier === from.tier && to.tier !== 4)
        const intoHandlers = to.handler && from.tier < 7
        if (upward || intoHandlers) wrong.push(`${path.relative(SRC, file)} -> ${path.relative(SRC, target)}`)
      }
    }
    expect(wrong).toEqual([])
  })

  it("reads the imports it judges", () => {
    // The rule above would pass vacuously if no import were found.
    const api = importsOf(path.join(SRC, "api.ts")).map((target) => path.relative(SRC, target))
    expect(api).toContain(path.join("flows", "api.ts"))
    expect(place(path.join(SRC, "flows", "http.ts"))).toEqual({ folder: "flows", tier: 6, handler: true })
    expect(place(path.join(SRC, "http", "edge.ts"))).toEqual({ folder: "http", tier: 3, handler: false })
  })
})
