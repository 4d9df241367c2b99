/** A local HTTP receiver for webhook and notification tests: records every request it gets. */
import { Effect } from "effect"
import { createServer } from "node:http"

export interface Received {
  readonly method: string
  readonly url: string
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: string
}

/** Listens on a free port for the scope's life; answers `status` (default 200) with `{"ok": true}`. */
export const receiver = (status = 200) =>
  Effect.acquireRelease(
    Effect.async<{ readonly url: string; readonly requests: Array<Received> }>((resume) => {
      const requests: Array<Received> = []
      const server = createServer((req, res) => {
        const chunks: Array<Buffer> = []
        req.on("data", (chunk: Buffer) => chunks.push(chunk))
        req.on("end", () => {
          requests.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers, body: Buffer.concat(chunks).toString("utf8") })
          res.writeHead(status, { "content-type": "application/json", "set-cookie": "session=secret" })
          res.end(JSON.stringify({ ok: true }))
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({ url: `http://127.0.0.1:${port}`, requests, server }))
      })
    }),
    (r) => Effect.promise(() => new Promise<void>((resolve) => (r as unknown as { server: { close: (cb: () => void) => void } }).server.close(() => resolve())))
  )
