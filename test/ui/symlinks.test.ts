/**
 * Symbolic links in the UI folder: one that leads outside it is never served; one that stays inside
 * is served as what it leads to. A file of its own: the folder must be made before the server starts.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, LogLevel } from "effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type LogLine, loggedServer } from "../support/logs.ts"
import { request } from "../support/server.ts"
import { NAVIGATION, rawRequest } from "./fixture.ts"

const SECRET = "root:x:0:0:not-for-browsers"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "baton-ui-links-"))
const outside = path.join(root, "outside")
const dir = path.join(root, "dist")
fs.mkdirSync(path.join(outside, "private"), { recursive: true })
fs.writeFileSync(path.join(outside, "passwd"), SECRET)
fs.writeFileSync(path.join(outside, "private", "key.txt"), SECRET)
fs.mkdirSync(path.join(dir, "assets"), { recursive: true })
fs.writeFileSync(path.join(dir, "index.html"), "<!doctype html><p>links</p>")
fs.writeFileSync(path.join(dir, "assets", "app-1a2b.js"), "export const inside = true")
// Leading out: absolute and relative, to a file and to a folder, and a chain through an inside link.
fs.symlinkSync(path.join(outside, "passwd"), path.join(dir, "passwd.txt"))
fs.symlinkSync("../../outside/passwd", path.join(dir, "assets", "passwd.js"))
fs.symlinkSync(path.join(outside, "private"), path.join(dir, "private"))
fs.symlinkSync("passwd.txt", path.join(dir, "again.txt"))
// A folder holding the link (a loop), and a link to nothing.
fs.symlinkSync(".", path.join(dir, "assets", "loop"))
fs.symlinkSync("missing.js", path.join(dir, "dangling.js"))
// Staying inside: served as the file it names.
fs.symlinkSync("assets/app-1a2b.js", path.join(dir, "app.js"))
afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

describe("symbolic links in the UI folder", () => {
  const lines: Array<LogLine> = []
  it.layer(loggedServer(lines, { "server.ui.static_directory": dir }, LogLevel.Info), { timeout: 60_000 })((it) => {
    it.effect("a link leading outside the folder is not served, one inside is, and the server serves on", () =>
      Effect.gen(function* () {
        for (const leaked of ["/passwd.txt", "/assets/passwd.js", "/private/key.txt", "/again.txt", "/dangling.js", "/assets/loop/app-1a2b.js"]) {
          const answer = yield* rawRequest("GET", leaked)
          expect(answer.status, leaked).toBe(404)
          expect(answer.body.toString(), leaked).not.toContain(SECRET)
          // A browser's navigation gets the UI's page, never the file.
          const page = yield* rawRequest("GET", leaked, NAVIGATION)
          expect(page.body.toString(), leaked).not.toContain(SECRET)
        }
        const inside = yield* rawRequest("GET", "/app.js")
        expect(inside.status).toBe(200)
        expect(inside.body.toString()).toBe("export const inside = true")
        expect((yield* rawRequest("GET", "/assets/app-1a2b.js")).status).toBe(200)
        expect((yield* rawRequest("GET", "/", NAVIGATION)).body.toString()).toContain("links")
        const warning = lines.find((line) => line.level === "WARN" && line.message.includes("symbolic links"))
        expect(warning?.message).toContain("passwd.txt")
        expect(warning?.message).toContain("private")
        expect(warning?.message).not.toContain(SECRET)
        expect((yield* request("GET", "/health")).status).toBe(200)
      })
    )
  })
})
