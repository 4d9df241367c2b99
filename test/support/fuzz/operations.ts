/**
 * Every operation of the Api, found by reflecting on the Api itself (an operation added later is
 * fuzzed without touching the fuzz test), with the schemas its requests are decoded with and the
 * error bodies it declares.
 */
import { HttpApi } from "@effect/platform"
import { Option, Schema } from "effect"
import { BatonApi } from "../../../src/api.ts"

export interface FuzzOperation {
  /** `group.endpoint`, e.g. `flows.create`. */
  readonly name: string
  readonly group: string
  readonly method: string
  /** The route, e.g. `/work_pools/:work_pool_name/queues/:name`. */
  readonly path: string
  readonly params: ReadonlyArray<string>
  readonly pathSchema: Schema.Schema.Any | undefined
  readonly querySchema: Schema.Schema.Any | undefined
  readonly payloadSchema: Schema.Schema.Any | undefined
  /** The body schema of each error status the operation declares (its own and the Api's). */
  readonly errors: ReadonlyMap<number, Schema.Schema.Any>
  /** The body schema of each success status it declares (none for an empty body). */
  readonly successes: ReadonlyMap<number, Schema.Schema.Any | undefined>
}

const schemaOf = (option: Option.Option<unknown>) => Option.getOrUndefined(option) as Schema.Schema.Any | undefined

export const operations: ReadonlyArray<FuzzOperation> = (() => {
  const found: Array<FuzzOperation> = []
  HttpApi.reflect(BatonApi, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, errors, group, successes }) => {
      const errorSchemas = new Map<number, Schema.Schema.Any>()
      for (const [status, error] of errors) {
        if (Option.isSome(error.ast)) errorSchemas.set(status, Schema.make(error.ast.value))
      }
      found.push({
        name: `${group.identifier}.${endpoint.name}`,
        group: group.identifier,
        method: endpoint.method,
        path: endpoint.path,
        params: [...endpoint.path.matchAll(/:([A-Za-z_]+)\??/g)].map((m) => m[1]!),
        pathSchema: schemaOf(endpoint.pathSchema),
        querySchema: schemaOf(endpoint.urlParamsSchema),
        // A GET's payload is read from the query string.
        payloadSchema: schemaOf(endpoint.payloadSchema),
        errors: errorSchemas,
        successes: new Map([...successes].map(([status, success]) => [status, Option.isSome(success.ast) ? Schema.make(success.ast.value) : undefined]))
      })
    }
  })
  return found
})()

/** Whether the operation reads a JSON body (a GET's payload is its query instead). */
export const takesBody = (operation: FuzzOperation) => operation.payloadSchema !== undefined && operation.method !== "GET"

/** The schema of the operation's query string: its URL parameters, or a GET's payload. */
export const queryOf = (operation: FuzzOperation) =>
  operation.querySchema ?? (takesBody(operation) ? undefined : operation.payloadSchema)
