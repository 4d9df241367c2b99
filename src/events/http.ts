import { apiGroup } from "../http/group.ts"
import { HttpServerRequest } from "@effect/platform"
import { Effect, Either, Layer, Schema } from "effect"
import { now } from "../domain/time.ts"
import { BatonApi } from "../api.ts"
import { normalizeBasePath } from "../http/edge.ts"
import { Forbidden, ValidationError } from "../domain/errors.ts"
import { Settings } from "../settings/settings.ts"
import { EVENT_PAGE_SIZE } from "./api.ts"
import { bucketProblem, spans } from "./counting.ts"
import { EventFilter, resolveFilter, type ResolvedEventFilter } from "./filter.ts"
import { EventsRepo } from "./repo.ts"
import { Events } from "./service.ts"

/**
 * A page token is the query it continues, in the clear as in the reference, so a client can write
 * one of its own. Only what this server could have issued decodes: a page of at most
 * EVENT_PAGE_SIZE events, at an offset within the count (a forged page size of millions would
 * otherwise read that many events into one answer).
 */
const PageToken = Schema.parseJson(
  Schema.Struct({
    filter: EventFilter,
    count: Schema.NonNegativeInt,
    page_size: Schema.Int.pipe(Schema.between(0, EVENT_PAGE_SIZE)),
    offset: Schema.NonNegativeInt
  }).pipe(Schema.filter((token) => token.offset <= token.count))
)
const encodeToken = Schema.encodeSync(PageToken)
const decodeToken = Schema.decodeUnknownEither(PageToken)

/** A page token that was not issued here, or no longer decodes, as the reference answers it. */
const invalidToken = new Forbidden({ detail: "Forbidden" })

export const EventsLive = apiGroup(BatonApi, "events", (handlers) =>
  Effect.gen(function* () {
    const events = yield* Events
    const repo = yield* EventsRepo
    const settings = yield* Settings
    const basePath = normalizeBasePath(settings.server.api.base_path)

    /** The URL of the page after `offset`, when there is one. */
    const nextPage = (filter: ResolvedEventFilter, count: number, pageSize: number, offset: number) =>
      Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
        if (offset + pageSize >= count) return null
        const token = Buffer.from(encodeToken({ filter, count, page_size: pageSize, offset: offset + pageSize })).toString("base64url")
        const protocol = request.headers["x-forwarded-proto"] ?? "http"
        return `${protocol}://${request.headers.host ?? "127.0.0.1"}${basePath}/events/filter/next?page-token=${token}`
      })

    const page = (filter: ResolvedEventFilter, count: number, pageSize: number, offset: number) =>
      Effect.gen(function* () {
        const found = yield* repo.read(filter, pageSize, offset)
        return { events: found, total: count, next_page: yield* nextPage(filter, count, pageSize, offset) }
      })

    return handlers
      .handle("create", ({ payload }) => Effect.asVoid(events.receive(payload)))
      .handle("filter", ({ payload }) =>
        Effect.gen(function* () {
          const filter = resolveFilter(payload.filter, yield* now)
          const count = yield* repo.count(filter)
          return yield* page(filter, count, payload.limit, 0)
        })
      )
      .handle("next", ({ urlParams }) =>
        Effect.gen(function* () {
          const json = Buffer.from(urlParams["page-token"], "base64url").toString("utf8")
          const token = decodeToken(json)
          if (Either.isLeft(token)) return yield* invalidToken
          const { filter, count, page_size, offset } = token.right
          if (filter.occurred?.since === undefined || filter.occurred.until === undefined) return yield* invalidToken
          return yield* page(filter as ResolvedEventFilter, count, page_size, offset)
        })
      )
      .handle("countBy", ({ path, payload }) =>
        Effect.gen(function* () {
          const at = yield* now
          const filter = resolveFilter(payload.filter, at)
          const byTime = path.countable === "day" || path.countable === "time"
          const unit = path.countable === "day" ? "day" : payload.time_unit
          const interval = path.countable === "day" ? 1 : payload.time_interval
          const problem = byTime ? bucketProblem(filter.occurred.since, filter.occurred.until, unit, interval) : undefined
          if (problem !== undefined) return yield* new ValidationError({ detail: problem })
          const counts = yield* repo.countBy(filter, path.countable, unit, interval)
          if (!byTime) return counts
          // Every bucket of the window, empty ones too, with its own bounds.
          const byIndex = new Map(counts.map((c) => [Number(c.value), c.count]))
          return spans(filter.occurred.since, filter.occurred.until, unit, interval, at).map((span) => ({
            value: String(span.index),
            label: span.start.toISOString().replace(/\.\d{3}Z$/, "+00:00"),
            count: byIndex.get(span.index) ?? 0,
            start_time: span.start,
            end_time: span.end
          }))
        })
      )
  })
).pipe(Layer.provide([Events.Default, EventsRepo.Default]))
