/**
 * Resuming a paused flow run: a suspended one is rescheduled ("Resuming"), a paused one runs again.
 * When the pause asked for input, `run_input` must satisfy the schema it stored, and is kept as the
 * run's response input. Used by POST /flow_runs/{id}/resume and the resume-flow-run action.
 */
import { Effect, Either, Option } from "effect"
import { checkAgainstSchema, describeFailure } from "../domain/json-schema.ts"
import { emptyStateDetails } from "../domain/states.ts"
import { now } from "../domain/time.ts"
import { Hydration } from "../variables/hydration.ts"
import { Orchestrator } from "../orchestration/orchestrator.ts"
import { FlowRunInputsRepo } from "./inputs-repo.ts"
import { FlowRunsRepo } from "./repo.ts"
import type { FlowRun, OrchestrationResult } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

export type ResumeResult = { readonly created: boolean } & typeof OrchestrationResult.Type

export class FlowRunResume extends Effect.Service<FlowRunResume>()("baton/FlowRunResume", {
  effect: Effect.gen(function* () {
    const runs = yield* FlowRunsRepo
    const inputs = yield* FlowRunInputsRepo
    const orchestrator = yield* Orchestrator
    const hydration = yield* Hydration

    /** A refusal to resume: the run keeps its paused state (the reference calls the details abort_details). */
    const refuse = (state: ResumeResult["state"], reason: string): ResumeResult => ({
      created: false,
      status: "REJECT",
      state,
      details: { type: "abort_details", reason }
    })

    /** The orchestration result of resuming the run; None when there is no such run. */
    const resume = (id: string, runInput: Record<string, unknown> | null) =>
      Effect.flatMap(runs.find(id), Option.match({
        onNone: () => Effect.succeedNone,
        onSome: (run) => Effect.asSome(resumeRun(run, runInput))
      }))

    const resumeRun = traced("FlowRunResume.resume")(function* (run: FlowRun, runInput: Record<string, unknown> | null) {
      const id = run.id
      const state = run.state
      if (state === null || state.type !== "PAUSED") {
        return {
          created: false,
          status: "ABORT",
          state: null,
          details: { type: "abort_details", reason: "Cannot resume a flow run that is not paused." }
        } satisfies ResumeResult as ResumeResult
      }
      const keyset = state.state_details.run_input_keyset
      let input = runInput ?? {}
      if (keyset !== null) {
        const hydrated = yield* hydration.hydrate(input)
        if (Either.isLeft(hydrated)) return refuse(state, `Error hydrating run input: ${hydrated.left}`)
        input = hydrated.right
        const stored = yield* inputs.find(id, keyset.schema ?? "")
        if (Option.isNone(stored)) return refuse(state, "Run input schema not found.")
        let schema: unknown
        try {
          schema = JSON.parse(stored.value)
        } catch {
          return refuse(state, "Run input schema is not valid JSON.")
        }
        const check = checkAgainstSchema(schema, input)
        if (!check.valid) return refuse(state, `Reason: ${describeFailure(check)}`)
      }
      const proposed = state.state_details.pause_reschedule
        ? { type: "SCHEDULED" as const, name: "Resuming", message: null, data: null, state_details: { ...emptyStateDetails, scheduled_time: yield* now } }
        : { type: "RUNNING" as const, name: null, message: null, data: null, state_details: emptyStateDetails }
      // Deleted since it was read: nothing was resumed.
      const outcome = yield* orchestrator.setFlowRunState(id, proposed)
      if (Option.isNone(outcome)) return refuse(null, "Flow run not found")
      const result = outcome.value
      if (keyset !== null && Object.keys(input).length > 0 && result.status === "ACCEPT" && keyset.response) {
        // A key taken already (or the run gone) leaves the stored input as it was.
        yield* inputs.create(id, { key: keyset.response, value: JSON.stringify(input), sender: null }).pipe(Effect.ignore)
      }
      return result as ResumeResult
    })

    return { resume } as const
  }),
  dependencies: [FlowRunsRepo.Default, FlowRunInputsRepo.Default, Orchestrator.Default, Hydration.Default]
}) {}
