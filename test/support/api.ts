/** Small helpers for API tests: create the objects a test needs and read back what the server holds. */
import { expect } from "@effect/vitest"
import { Effect } from "effect"
import { request } from "./server.ts"

/** The body of a response with one of `statuses` (any 200 or 201 when none are given). */
export const ok = (res: { readonly status: number; readonly body: any }, ...statuses: Array<number>) => {
  expect(statuses.length ? statuses : [200, 201], JSON.stringify(res.body)).toContain(res.status)
  return res.body
}

export const makeFlow = (name: string, body: Record<string, unknown> = {}) =>
  Effect.map(request("POST", "/flows/", { body: { name, ...body } }), (res) => ok(res).id as string)

export const makeDeployment = (body: Record<string, unknown>) =>
  Effect.map(request("POST", "/deployments/", { body }), (res) => ok(res))

/** The runs of one flow, soonest expected start first. */
export const runsOf = (flowId: string) =>
  Effect.map(
    request("POST", "/flow_runs/filter", { body: { flows: { id: { any_: [flowId] } }, sort: "EXPECTED_START_TIME_ASC" } }),
    (res) => ok(res, 200) as Array<any>
  )
