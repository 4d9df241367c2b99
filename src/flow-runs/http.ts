import { apiGroup } from "../http/group.ts"
import { HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option, Stream } from "effect"
import { jsonListBytes } from "../domain/json-list.ts"
import { paginateJson, resolveLimit } from "../domain/pagination.ts"
import { orFail } from "../domain/errors.ts"
import { historyWindow } from "../orchestration/history.ts"
import { BatonApi } from "../api.ts"
import { contentDisposition, CSV_HEADER, csvRows } from "../logs/csv.ts"
import { LogsRepo } from "../logs/repo.ts"
import { jsonBytes, jsonText, jsonTextCreatedOrFound } from "../http/responses.ts"
import { FlowRunInputNotFound, FlowRunNotFound, FlowRunStateNotFound } from "./errors.ts"
import { FlowRunInputsRepo } from "./inputs-repo.ts"
import { FlowRunsRepo } from "./repo.ts"
import { FlowRunResume } from "./resume.ts"
import { FlowRuns } from "./service.ts"
import { flowRunJson, orchestrationResultJson } from "./wire.ts"
import type { OrchestrationResult } from "./schemas.ts"

/** Logs read per page of a download. */
const LOG_PAGE = 1000

/** An orchestration result: 201 when a new state was stored, 200 otherwise (written by wire.ts, as its schema encodes it). */
const answer = (result: { readonly created: boolean } & typeof OrchestrationResult.Type) =>
  Effect.succeed(jsonTextCreatedOrFound(orchestrationResultJson(result), result.created))

export const FlowRunsLive = apiGroup(BatonApi, "flowRuns", (handlers) =>
  Effect.gen(function* () {
    const flowRuns = yield* FlowRuns
    const runs = yield* FlowRunsRepo
    const inputs = yield* FlowRunInputsRepo
    const logs = yield* LogsRepo
    const resumer = yield* FlowRunResume

    return handlers
      .handle("create", ({ payload }) =>
        Effect.map(flowRuns.create(payload), ({ run, created }) => jsonTextCreatedOrFound(flowRunJson(run), created))
      )
      .handle("read", ({ path }) =>
        Effect.map(flowRuns.find(path.id), (run) => jsonText(flowRunJson(run))))
      .handle("update", ({ path, payload }) => flowRuns.update(path.id, payload))
      .handle("delete", ({ path }) =>
        Effect.flatMap(runs.remove(path.id), (deleted) => (deleted ? Effect.void : new FlowRunNotFound()))
      )
      .handle("count", ({ payload }) => runs.count(payload))
      // A page of runs written to JSON by the database (page-json.ts): the schema's encoding, faster.
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          Effect.map(runs.filterJson({ ...payload, limit }), (runs) => jsonBytes(jsonListBytes(runs))))
      )
      .handle("paginate", ({ payload }) =>
        Effect.map(
          paginateJson(payload, (limit, offset) => runs.filterJson({ ...payload, limit, offset }), runs.count(payload)),
          (page) => jsonBytes(page)
        ))
      .handle("bulkDelete", ({ payload }) =>
        Effect.map(runs.removeMatching(payload.flow_runs, payload.limit), (deleted) => ({ deleted }))
      )
      .handle("updateLabels", ({ path, payload }) =>
        Effect.flatMap(runs.updateLabels(path.id, payload), (updated) => (updated ? Effect.void : new FlowRunNotFound()))
      )
      .handle("lateness", ({ payload }) => runs.lateness(payload))
      .handle("history", ({ payload }) => Effect.flatMap(historyWindow(payload), (window) => runs.history(payload, window)))
      .handle("bulkSetState", ({ payload }) =>
        flowRuns.bulkSetState(payload.flow_runs, payload.limit, payload.state, payload.force)
      )
      .handle("createInput", ({ path, payload }) => Effect.as(inputs.create(path.id, payload), null))
      .handle("filterInputs", ({ path, payload }) => inputs.filter(path.id, payload))
      .handle("readInput", ({ path }) =>
        inputs.find(path.id, path.key).pipe(
          orFail(() => new FlowRunInputNotFound()),
          Effect.map((value) => HttpServerResponse.text(value))
        )
      )
      .handle("deleteInput", ({ path }) =>
        Effect.flatMap(inputs.remove(path.id, path.key), (deleted) => (deleted ? Effect.void : new FlowRunInputNotFound()))
      )
      .handle("resume", ({ path, payload }) =>
        resumer.resume(path.id, payload.run_input).pipe(orFail(() => new FlowRunNotFound()), Effect.flatMap(answer))
      )
      .handle("downloadLogs", ({ path }) =>
        Effect.gen(function* () {
          const run = yield* flowRuns.find(path.id)
          const pages = Stream.paginateEffect(0, (offset) =>
            Effect.map(
              logs.filter({ filter: { operator: "and_", flow_run_id: { any_: [path.id] } }, sort: "TIMESTAMP_ASC", offset, limit: LOG_PAGE }),
              (page) => [csvRows(page), page.length < LOG_PAGE ? Option.none() : Option.some(offset + LOG_PAGE)] as const
            )
          )
          return HttpServerResponse.stream(Stream.encodeText(Stream.concat(Stream.make(CSV_HEADER), pages)), {
            contentType: "text/csv; charset=utf-8",
            headers: { "content-disposition": contentDisposition(run.name) }
          })
        })
      )
      .handle("graph", ({ path }) => flowRuns.graph(path.id))
      .handle("graphV2", ({ path, urlParams }) => flowRuns.graphV2(path.id, urlParams.since))
      .handle("setState", ({ path, payload }) =>
        Effect.flatMap(flowRuns.setState(path.id, payload.state, payload.force), answer)
      )
  })
).pipe(Layer.provide([FlowRunInputsRepo.Default, FlowRunResume.Default, FlowRuns.Default, FlowRunsRepo.Default, LogsRepo.Default]))

export const FlowRunStatesLive = apiGroup(BatonApi, "flowRunStates", (handlers) =>
  Effect.gen(function* () {
    const runs = yield* FlowRunsRepo
    return handlers
      .handle("read", ({ path }) => runs.findState(path.id).pipe(orFail(() => new FlowRunStateNotFound())))
      .handle("list", ({ urlParams }) => runs.readStates(urlParams.flow_run_id))
  })
).pipe(Layer.provide(FlowRunsRepo.Default))
