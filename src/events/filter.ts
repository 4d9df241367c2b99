/**
 * EventFilter: which events a query, a count or a live stream wants. Every criterion must hold.
 * Label values are patterns (glob.ts: `*`, `?`, a leading `!` negates). Compiled to SQL over `events`
 * and `event_resources`, and matched in memory for live streams, both through glob.ts.
 */
import type { Statement } from "@effect/sql"
import type { SqlClient } from "@effect/sql/SqlClient"
import { ParseResult, Schema } from "effect"
import { strictStruct } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import { parseTextQuery } from "../domain/text-search.ts"
import { Timestamp } from "../domain/time.ts"
import { exactValue, globMatches, likePattern, MAX_SINGLE_WILDCARDS, parseGlob, singleWildcards } from "./glob.ts"
import { type ReceivedEvent, type Resource, resourceId, resourceRole } from "./schemas.ts"
import * as Lax from "../domain/lax.ts"

const strings = Schema.optional(Schema.NullOr(Schema.Array(Schema.String)))

/**
 * A label pattern (glob.ts), refused with 422 when it holds more `?` than matching can afford.
 * Checked on decode only (a stored automation reads back whatever it holds); the decoded side is
 * declared rather than `Schema.String` so that the 422 gives this reason, not "a valid string".
 */
export const LabelPattern = Schema.transformOrFail(
  Schema.String,
  Schema.declare((value): value is string => typeof value === "string", {
    identifier: "LabelPattern",
    arbitrary: () => (fc) => fc.string()
  }),
  {
    strict: true,
    decode: (pattern, _, ast) =>
      singleWildcards(pattern) <= MAX_SINGLE_WILDCARDS
        ? ParseResult.succeed(pattern)
        : ParseResult.fail(new ParseResult.Type(ast, pattern, `A pattern may hold at most ${MAX_SINGLE_WILDCARDS} '?' wildcards`)),
    encode: ParseResult.succeed
  }
)

/** Labels and the values (patterns, `!` negates) each must match. */
export const ResourceSpecification = Schema.Record({
  key: Schema.String,
  value: Schema.Union(LabelPattern, Schema.Array(LabelPattern))
}).annotations({ identifier: "ResourceSpecification" })
export type ResourceSpecification = typeof ResourceSpecification.Type

const labels = Schema.optional(Schema.NullOr(ResourceSpecification))

const ResourceFields = {
  id: strings,
  id_prefix: strings,
  labels
}

const EventRelatedFilter = strictStruct(
  {
    id: strings,
    role: strings,
    resources_in_roles: Schema.optional(Schema.NullOr(Schema.Array(Schema.Tuple(Schema.String, Schema.String)))),
    labels
  },
  "EventRelatedFilter"
)
type EventRelatedFilter = typeof EventRelatedFilter.Type

const EventAnyResourceFilter = strictStruct(ResourceFields, "EventAnyResourceFilter")
type EventAnyResourceFilter = typeof EventAnyResourceFilter.Type

const oneOrMany = <S extends Schema.Schema.Any>(schema: S) => Schema.optional(Schema.NullOr(Schema.Union(schema, Schema.Array(schema))))

export const EventOrder = Schema.Literal("ASC", "DESC").annotations({ identifier: "EventOrder" })

export const EventFilter = strictStruct(
  {
    occurred: Schema.optional(
      strictStruct({ since: Schema.optional(Timestamp), until: Schema.optional(Timestamp) }, "EventOccurredFilter")
    ),
    event: Schema.optional(
      Schema.NullOr(
        strictStruct({ prefix: strings, exclude_prefix: strings, name: strings, exclude_name: strings }, "EventNameFilter")
      )
    ),
    resource: Schema.optional(
      Schema.NullOr(
        strictStruct({ ...ResourceFields, distinct: Schema.optionalWith(Lax.Bool, { default: () => false }) }, "EventResourceFilter")
      )
    ),
    related: oneOrMany(EventRelatedFilter),
    any_resource: oneOrMany(EventAnyResourceFilter),
    id: Schema.optional(strictStruct({ id: Schema.optional(Schema.NullOr(Schema.Array(Id))) }, "EventIDFilter")),
    text: Schema.optional(Schema.NullOr(strictStruct({ query: Schema.String.pipe(Schema.maxLength(200)) }, "EventTextFilter"))),
    order: Schema.optionalWith(EventOrder, { default: () => "DESC" as const })
  },
  "EventFilter"
)
export type EventFilter = typeof EventFilter.Type

/** A filter whose time window is settled: what queries, page tokens and streams use. */
export type ResolvedEventFilter = EventFilter & { readonly occurred: { readonly since: Date; readonly until: Date } }

const DAY = 24 * 60 * 60 * 1000

/** Without a window, events of the last 180 days (from the start of that day) up to `now`. */
export const resolveFilter = (filter: EventFilter | null | undefined, now: Date): ResolvedEventFilter => {
  const startOfToday = Math.floor(now.getTime() / DAY) * DAY
  const base: EventFilter = filter ?? { order: "DESC" }
  return {
    ...base,
    occurred: {
      since: base.occurred?.since ?? new Date(startOfToday - 180 * DAY),
      until: base.occurred?.until ?? now
    }
  }
}

const asList = <A>(value: A | ReadonlyArray<A> | null | undefined): ReadonlyArray<A> =>
  value === null || value === undefined ? [] : Array.isArray(value) ? (value as ReadonlyArray<A>) : [value as A]

const ROLE = "prefect.resource.role"

const specEntries = (spec: ResourceSpecification): ReadonlyArray<[string, ReadonlyArray<string>]> =>
  Object.entries(spec).map(([label, value]) => [label, typeof value === "string" ? [value] : value])

// ----------------------------------------------------------------------------------------------
// In memory

/** Whether `value` matches `expected` (a pattern; a leading `!` negates); a missing label matches nothing. */
export const labelMatches = globMatches

/** Whether the resource has every label of the specification, each matching one of its values. */
export const resourceMatches = (spec: ResourceSpecification, resource: Resource): boolean =>
  specEntries(spec).every(([label, values]) => values.some((expected) => labelMatches(expected, resource[label])))

/**
 * The event's own resource as filters see it: without a role, as it is stored (its role column is
 * empty), so that a role pattern never matches it, in memory as in SQL.
 */
const primary = (resource: Resource): Resource => {
  if (!(ROLE in resource)) return resource
  const { [ROLE]: _role, ...rest } = resource
  return rest
}

const resourceCriteriaMatch = (criteria: EventAnyResourceFilter, resource: Resource) =>
  (!criteria.id || criteria.id.includes(resourceId(resource))) &&
  (!criteria.id_prefix || criteria.id_prefix.some((prefix) => resourceId(resource).startsWith(prefix))) &&
  (!criteria.labels || resourceMatches(criteria.labels, resource))

const relatedMatches = (criteria: EventRelatedFilter, resource: Resource) =>
  (!criteria.id || criteria.id.includes(resourceId(resource))) &&
  (!criteria.role || criteria.role.includes(resourceRole(resource))) &&
  (!criteria.resources_in_roles ||
    criteria.resources_in_roles.some(([id, role]) => resourceId(resource) === id && resourceRole(resource) === role)) &&
  (!criteria.labels || resourceMatches(criteria.labels, resource))

/** The text an event's text search looks in: its name, label values and payload. */
const searchableText = (event: ReceivedEvent) =>
  [event.event, ...Object.values(event.resource), ...event.related.flatMap((r) => Object.values(r)), JSON.stringify(event.payload)]
    .join(" ")
    .toLowerCase()

/** Whether `event` is one the (resolved) filter asks for. */
export const eventMatches = (filter: ResolvedEventFilter, event: ReceivedEvent): boolean => {
  const occurred = event.occurred.getTime()
  if (occurred < filter.occurred.since.getTime() || occurred > filter.occurred.until.getTime()) return false
  const names = filter.event
  if (names) {
    if (names.prefix && !names.prefix.some((p) => event.event.startsWith(p))) return false
    if (names.exclude_prefix && names.exclude_prefix.some((p) => event.event.startsWith(p))) return false
    if (names.name && !names.name.includes(event.event)) return false
    if (names.exclude_name && names.exclude_name.includes(event.event)) return false
  }
  if (filter.resource && !resourceCriteriaMatch(filter.resource, primary(event.resource))) return false
  for (const related of asList(filter.related)) {
    if (!event.related.some((r) => relatedMatches(related, r))) return false
  }
  for (const any of asList(filter.any_resource)) {
    if (![primary(event.resource), ...event.related].some((r) => resourceCriteriaMatch(any, r))) return false
  }
  if (filter.id?.id && !filter.id.id.includes(event.id)) return false
  if (filter.text && filter.text.query.trim() !== "") {
    const query = parseTextQuery(filter.text.query)
    const text = searchableText(event)
    const contains = (term: string) => text.includes(term.toLowerCase())
    if (query.include.length > 0 && !query.include.some(contains)) return false
    if (query.exclude.some(contains) || !query.required.every(contains)) return false
  }
  return true
}

// ----------------------------------------------------------------------------------------------
// In SQL

type Fragment = Statement.Fragment

/**
 * Patterns as one condition: the column is LIKE one of the patterns (glob.ts escapes LIKE's own
 * wildcards with `\`, LIKE's default escape character), or NOT LIKE one of the negated ones, which a
 * missing label (NULL) fails too, as in memory. Each list is one array parameter however long it is
 * (a condition per pattern would need a parameter each, and nest one `OR` per pattern).
 */
const likeAny = (sql: SqlClient, column: Fragment, expected: ReadonlyArray<string>): Fragment => {
  const globs = expected.map(parseGlob)
  const positive = globs.filter((g) => !g.negated).map(likePattern)
  const negated = globs.filter((g) => g.negated).map(likePattern)
  if (negated.length === 0) return sql`${column} LIKE ANY(${positive}::text[])`
  if (positive.length === 0) return sql`NOT (${column} LIKE ALL(${negated}::text[]))`
  return sql`(${column} LIKE ANY(${positive}::text[]) OR NOT (${column} LIKE ALL(${negated}::text[])))`
}

/** The column starts with one of `prefixes` (one array parameter). */
const startsWithAny = (sql: SqlClient, column: Fragment, prefixes: ReadonlyArray<string>): Fragment =>
  sql`EXISTS (SELECT 1 FROM unnest(${prefixes}::text[]) AS p(prefix) WHERE starts_with(${column}, p.prefix))`

/** Conditions on one event_resources row `r` for a label specification. */
const labelConditions = (sql: SqlClient, spec: ResourceSpecification): Array<Fragment> =>
  specEntries(spec).map(([label, values]) => {
    if (values.length === 0) return sql`FALSE`
    const column =
      label === "prefect.resource.id"
        ? sql`r.resource_id`
        : label === "prefect.resource.role"
        ? sql`NULLIF(r.resource_role, '')`
        : sql`(r.resource ->> ${label})`
    const exact = values.map((v) => exactValue(parseGlob(v)))
    // Only related resources have a role, never an empty one.
    return label === "prefect.resource.role" && exact.every((v) => v !== undefined)
      ? sql`r.resource_role = ANY(${exact.filter((v) => v !== "")}::text[])`
      : likeAny(sql, column, values)
  })

/** The event has a resource row, within the filter's window, meeting every one of `conditions`. */
const hasResource = (sql: SqlClient, filter: ResolvedEventFilter, conditions: Array<Fragment>): Fragment =>
  sql`events.id IN (
    SELECT r.event_id FROM event_resources r
    WHERE r.occurred >= ${filter.occurred.since} AND r.occurred <= ${filter.occurred.until} AND ${sql.and(conditions)}
  )`

/** The filter as one condition on `events`. */
export const compileEventFilter = (sql: SqlClient, filter: ResolvedEventFilter): Fragment => {
  const where: Array<Fragment> = [
    sql`events.occurred >= ${filter.occurred.since}`,
    sql`events.occurred <= ${filter.occurred.until}`
  ]
  const names = filter.event
  if (names) {
    if (names.prefix) where.push(startsWithAny(sql, sql`events.event`, names.prefix))
    if (names.exclude_prefix) where.push(sql`NOT ${startsWithAny(sql, sql`events.event`, names.exclude_prefix)}`)
    if (names.name) where.push(sql`events.event = ANY(${names.name}::text[])`)
    if (names.exclude_name) where.push(sql`NOT (events.event = ANY(${names.exclude_name}::text[]))`)
  }
  const resource = filter.resource
  if (resource) {
    if (resource.id) where.push(sql`events.resource_id = ANY(${resource.id}::text[])`)
    if (resource.id_prefix) where.push(startsWithAny(sql, sql`events.resource_id`, resource.id_prefix))
    if (resource.labels) {
      where.push(hasResource(sql, filter, [sql`r.resource_role = ''`, ...labelConditions(sql, resource.labels)]))
    }
  }
  for (const related of asList(filter.related)) {
    const conditions: Array<Fragment> = []
    if (related.id) conditions.push(sql`r.resource_id = ANY(${related.id}::text[])`)
    if (related.role) conditions.push(sql`r.resource_role = ANY(${related.role}::text[])`)
    if (related.resources_in_roles) {
      const pairs = related.resources_in_roles
      conditions.push(
        sql`(r.resource_id, r.resource_role) IN (SELECT * FROM unnest(${pairs.map(([id]) => id)}::text[], ${pairs.map(([, role]) => role)}::text[]))`
      )
    }
    if (related.labels) conditions.push(...labelConditions(sql, related.labels))
    if (conditions.length === 0) continue
    // Related resources only: the event's own resource has no role.
    if (!related.role) conditions.push(sql`r.resource_role <> ''`)
    where.push(hasResource(sql, filter, conditions))
  }
  for (const any of asList(filter.any_resource)) {
    const conditions: Array<Fragment> = []
    if (any.id) conditions.push(sql`r.resource_id = ANY(${any.id}::text[])`)
    if (any.id_prefix) conditions.push(startsWithAny(sql, sql`r.resource_id`, any.id_prefix))
    if (any.labels) conditions.push(...labelConditions(sql, any.labels))
    if (conditions.length > 0) where.push(hasResource(sql, filter, conditions))
  }
  if (filter.id?.id) where.push(sql`events.id = ANY(${filter.id.id}::uuid[])`)
  if (filter.text && filter.text.query.trim() !== "") {
    const query = parseTextQuery(filter.text.query)
    const text = sql`lower(events.event || ' ' || events.resource::text || ' ' || events.related::text || ' ' || events.payload::text)`
    const contains = (term: string) => sql`strpos(${text}, ${term.toLowerCase()}) > 0`
    if (query.include.length > 0) where.push(sql.or(query.include.map(contains)))
    for (const term of query.exclude) where.push(sql`NOT ${contains(term)}`)
    for (const term of query.required) where.push(contains(term))
  }
  return sql.and(where)
}
