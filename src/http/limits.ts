/**
 * The request body limit (server.api.max_request_body_size). A body announced larger than the limit
 * (Content-Length) is refused with 413 before a byte of it is read; a chunked body, whose size
 * nobody announces, is read up to the limit and refused as soon as it goes past it. Either way the
 * connection is closed after the answer, so the rest of the body is never read. A body within the
 * limit is handed on as it was (a chunked one from the bytes already read). The check here is the
 * only one: the platform reads what is handed on without a limit of its own (its MaxBodySize is
 * left unset, as providing it would cost every request a change of context).
 */
import { HttpServerError, type HttpServerRequest, type HttpServerResponse, UrlParams } from "@effect/platform"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Effect, Either, Option, Stream } from "effect"
import type { IncomingMessage } from "node:http"
import type { SettingsValue } from "../settings/settings.ts"
import { BadRequest } from "../domain/errors.ts"
import { groupThousands } from "../domain/strings.ts"
import { BadRequestResponse, errorResponse, PayloadTooLarge, PayloadTooLargeResponse } from "./errors.ts"

/**
 * Reads the body of `source`: `done` is called once, with its bytes when there are at most `max` of
 * them, with none as soon as there are more (reading stops there), or with the error (a client that
 * goes away before the end of its body is one). Answers a function that stops listening.
 */
export const readBody = (
  source: IncomingMessage,
  max: number,
  done: (result: Either.Either<Option.Option<Buffer>, Error>) => void
): (() => void) => {
  const chunks: Array<Buffer> = []
  let size = 0
  const finish = (result: Either.Either<Option.Option<Buffer>, Error>) => {
    stop()
    done(result)
  }
  const onData = (chunk: Buffer) => {
    size += chunk.length
    if (size <= max) return void chunks.push(chunk)
    // Nothing more is read: the answer closes the connection.
    source.pause()
    finish(Either.right(Option.none()))
  }
  const onEnd = () => finish(Either.right(Option.some(Buffer.concat(chunks))))
  const onError = (error: Error) => finish(Either.left(error))
  const onClose = () => finish(Either.left(new Error("the client closed the connection before sending the whole body")))
  const stop = () => {
    source.off("data", onData)
    source.off("end", onEnd)
    source.off("error", onError)
    source.off("close", onClose)
  }
  source.on("data", onData)
  source.on("end", onEnd)
  source.on("error", onError)
  source.on("close", onClose)
  return stop
}

/** The bytes of `source` when there are at most `max` of them; none as soon as there are more. */
const readAtMost = (source: IncomingMessage, max: number): Effect.Effect<Option.Option<Buffer>, Error> =>
  Effect.async((resume) => Effect.sync(readBody(source, max, (result) => resume(Either.match(result, { onLeft: Effect.fail, onRight: Effect.succeed })))))

/** `request` with `body` as its body, already read: every way of reading it answers from `body`. */
export const withBody = (request: HttpServerRequest.HttpServerRequest, body: Buffer): HttpServerRequest.HttpServerRequest => {
  const decodeError = (cause: unknown) => new HttpServerError.RequestError({ request, reason: "Decode", cause })
  const text = body.toString("utf8")
  const read = <A>(f: () => A) => Effect.try({ try: f, catch: decodeError })
  return Object.create(request, {
    text: { get: () => Effect.succeed(text) },
    json: { get: () => read(() => (text === "" ? null : JSON.parse(text) as unknown)) },
    urlParamsBody: { get: () => read(() => UrlParams.fromInput(new URLSearchParams(text))) },
    arrayBuffer: {
      get: () => Effect.succeed(body.buffer.slice(body.byteOffset, body.byteOffset + body.byteLength) as ArrayBuffer)
    },
    stream: { get: () => Stream.succeed(new Uint8Array(body)) }
  }) as HttpServerRequest.HttpServerRequest
}

/**
 * The limit for `settings`: a request within it (to hand on), or the 413 to answer. With the limit
 * at 0 every request goes on unread.
 */
export const bodyLimit = (settings: SettingsValue) => {
  const max = settings.server.api.max_request_body_size
  const tooLarge = errorResponse(
    PayloadTooLargeResponse,
    new PayloadTooLarge({ detail: `Request body is larger than the limit of ${groupThousands(max)} bytes.` }),
    { connection: "close" }
  )
  const incomplete = errorResponse(BadRequestResponse, new BadRequest({ detail: "Incomplete request body." }), {
    connection: "close"
  })
  const check = (
    request: HttpServerRequest.HttpServerRequest
  ): Effect.Effect<Either.Either<HttpServerRequest.HttpServerRequest, HttpServerResponse.HttpServerResponse>> => {
    if (max === 0) return Effect.succeed(Either.right(request))
    const length = request.headers["content-length"]
    if (length !== undefined) {
      return Effect.succeed(Number(length) > max ? Either.left(tooLarge) : Either.right(request))
    }
    if (request.headers["transfer-encoding"] === undefined) return Effect.succeed(Either.right(request))
    const source = NodeHttpServerRequest.toIncomingMessage(request) as IncomingMessage | undefined
    if (source === undefined || typeof source.on !== "function") return Effect.succeed(Either.right(request))
    return readAtMost(source, max).pipe(
      Effect.map(Option.match({
        onNone: () => Either.left(tooLarge),
        onSome: (body) => Either.right(withBody(request, body))
      })),
      // The client went away (or broke the chunked encoding) in the middle of its body.
      Effect.catchAll(() => Effect.succeed(Either.left(incomplete)))
    )
  }
  return { check } as const
}
