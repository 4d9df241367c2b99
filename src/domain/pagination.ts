/** Offset/limit pages with the server's default limit, as the reference's filter operations take them. */
import { Effect, Schema } from "effect"
import { jsonListBytes } from "./json-list.ts"
import { ValidationError } from "./errors.ts"
import { Id } from "./ids.ts"
import * as Lax from "./lax.ts"
import { Settings } from "../settings/settings.ts"

/** `limit` of a filter body: omitted means `server.api.default_limit`. */
export const LimitField = Schema.optional(Schema.NullOr(Lax.Int))

export const OffsetField = Schema.optionalWith(Lax.int({ ge: 0 }), { default: () => 0 })

/** The page size to use: the default when omitted; between 0 and the default limit, else 422. */
export const resolveLimit = (limit: number | null | undefined) =>
  Effect.flatMap(Settings, (settings) => {
    const max = settings.server.api.default_limit
    if (limit === null || limit === undefined) return Effect.succeed(max)
    if (limit < 0) return Effect.fail(new ValidationError({ detail: "Invalid limit: must be greater than or equal to 0." }))
    if (limit > max) return Effect.fail(new ValidationError({ detail: `Invalid limit: must be less than or equal to ${max}.` }))
    return Effect.succeed(limit)
  })

/** The reference's paginate answer: a page of results with the total count. */
export const paginated = <A>(results: ReadonlyArray<A>, count: number, limit: number, page: number) => ({
  results,
  count,
  limit,
  pages: limit === 0 ? 0 : Math.ceil(count / limit),
  page
})

/** The rows of `read(limit, offset)` for `page` (from 1), the total `count`, and the limit. */
const readPage = <A, E, R>(
  options: { readonly limit?: number | null | undefined; readonly page: number },
  read: (limit: number, offset: number) => Effect.Effect<A, E, R>,
  count: Effect.Effect<number, E, R>
) =>
  Effect.flatMap(resolveLimit(options.limit), (limit) =>
    Effect.map(Effect.all([read(limit, (options.page - 1) * limit), count]), ([results, total]) => ({ results, total, limit })))

/** One page: the rows of `read(limit, offset)` for `page` (from 1) and the total `count`. */
export const paginate = <A, E, R>(
  options: { readonly limit?: number | null | undefined; readonly page: number },
  read: (limit: number, offset: number) => Effect.Effect<ReadonlyArray<A>, E, R>,
  count: Effect.Effect<number, E, R>
) => Effect.map(readPage(options, read, count), ({ limit, results, total }) => paginated(results, total, limit, options.page))

/**
 * `paginate` for a read that answers its rows as JSON texts (rows the database wrote): the same
 * answer, as UTF-8 bytes (./json-list.ts).
 */
export const paginateJson = <E, R>(
  options: { readonly limit?: number | null | undefined; readonly page: number },
  read: (limit: number, offset: number) => Effect.Effect<ReadonlyArray<string>, E, R>,
  count: Effect.Effect<number, E, R>
) =>
  Effect.map(readPage(options, read, count), ({ limit, results, total }) => {
    const { pages, page } = paginated([], total, limit, options.page)
    return jsonListBytes(results, `{"results":[`, `],"count":${total},"limit":${limit},"pages":${pages},"page":${page}}`)
  })

export const PaginationResponse = <S extends Schema.Schema.Any>(item: S, identifier: string) =>
  Schema.Struct({
    results: Schema.Array(item),
    count: Schema.Int,
    limit: Schema.Int,
    pages: Schema.Int,
    page: Schema.Int
  }).annotations({ identifier })

/**
 * The bodies of an area's filter, count and paginate operations: its filters, plus sort, offset and
 * limit (filter) or sort, page and limit (paginate).
 */
export const queryBodies = <Fields extends Schema.Struct.Fields, Sort extends string>(
  filters: Fields,
  sort: Schema.Schema<Sort>,
  defaultSort: NoInfer<Sort>
) => {
  const sortField = Schema.optionalWith(sort, { default: () => defaultSort })
  return {
    read: Schema.Struct({ ...filters, sort: sortField, offset: OffsetField, limit: LimitField }),
    count: Schema.Struct(filters),
    paginate: Schema.Struct({
      ...filters,
      sort: sortField,
      page: Schema.optionalWith(Lax.int({ ge: 1 }), { default: () => 1 }),
      limit: LimitField
    })
  }
}

/** A bulk delete body: a filter under `key` and at most `limit` (1 to 50, default 50) objects. */
export const bulkDeleteBody = <K extends string, S extends Schema.Schema.Any>(key: K, filter: S) =>
  Schema.Struct({
    [key]: Schema.optional(Schema.NullOr(filter)),
    limit: Schema.optionalWith(Lax.int({ ge: 1, le: 50 }), { default: () => 50 })
  } as { [P in K]: Schema.optional<Schema.NullOr<S>> } & { limit: Schema.optionalWith<Schema.Schema<number, unknown>, { default: () => number }> })

/** A bulk delete answer: the ids deleted. */
export const BulkDeleteResponse = (identifier: string) =>
  Schema.Struct({ deleted: Schema.Array(Id) }).annotations({ identifier })
