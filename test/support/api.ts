/** Small helpers for API tests: create the objects a test needs and read back what the server holds. */
import { expect } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { Deployment } from "../../src/deployments/schemas.ts"
import { Flow } from "../../src/flows/schemas.ts"
import { type Json, request } from "./server.ts"

interface Answer {
  readonly status: number
  readonly body: Json
}

/** The body of a response with one of `statuses` (any 200 or 201 when none are given). */
export const ok = (res: Answer, ...statuses: Array<number>): Json => {
  expect(statuses.length ? statuses : [200, 201], JSON.stringify(res.body)).toContain(res.status)
  return res.body
}

/** The `id` of an answered object, checked to be a string: the id a test passes on to its next request. */
export const idOf = (body: Json): string => {
  const id = body.id
  if (typeof id !== "string") throw new Error(`no id in ${JSON.stringify(body)}`)
  return id
}

/**
 * `ok`, and the body checked against a wire schema's encoded side: typed as the wire has it
 * (`typeof Flow.Encoded`: dates as strings), every field kept, including those the schema does not
 * name. For objects a test goes on to use (an id to pass, a record to read back).
 */
export const okAs = <A, I>(schema: Schema.Schema<A, I>, res: Answer, ...statuses: Array<number>): I =>
  Schema.decodeUnknownSync(Schema.encodedSchema(schema), { onExcessProperty: "preserve" })(ok(res, ...statuses))

export const makeFlow = (name: string, body: Record<string, unknown> = {}) =>
  Effect.map(request("POST", "/flows/", { body: { name, ...body } }), (res) => okAs(Flow, res).id)

export const makeDeployment = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/deployments/", { body }), (res) => okAs(Deployment, res))

/** The runs of one flow, soonest expected start first. */
export const runsOf = (flowId: string) =>
  Effect.map(
    request("POST", "/flow_runs/filter", { body: { flows: { id: { any_: [flowId] } }, sort: "EXPECTED_START_TIME_ASC" } }),
    (res) => ok(res, 200)
  )

/**
 * `effect` run by its first caller, its result handed to every later one: setup that several tests
 * of one server only read (a set of objects to filter), made once whichever test runs first.
 */
export const once = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> => {
  let made: { readonly value: A } | undefined
  return Effect.suspend(() =>
    made
      ? Effect.succeed(made.value)
      : Effect.tap(effect, (value) =>
        Effect.sync(() => {
          made = { value }
        })
      )
  )
}
