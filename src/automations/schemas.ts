/**
 * Automations on the wire, as the reference models them: a trigger (event, compound or sequence)
 * and the actions to take when it fires, each action a `type`-tagged object. Durations (`within`,
 * `schedule_after`) are seconds.
 */
import { Schema } from "effect"
import { criterion, Criterion, Filter } from "../domain/filters.ts"
import { Id } from "../domain/ids.ts"
import * as Lax from "../domain/lax.ts"
import { LimitField, OffsetField } from "../domain/pagination.ts"
import { JsonObject, strictBody } from "../domain/schemas.ts"
import { StateType } from "../domain/states.ts"
import { validateTemplate } from "../domain/templates.ts"
import { Timestamp } from "../domain/time.ts"
import { LabelPattern, ResourceSpecification } from "../events/filter.ts"
import { PrecheckAnnotationId } from "../http/input-checks.ts"
import { nestedTooDeep, parameterProblems, precheckTriggerDepth, runDeploymentLoop, tooDeep } from "./body-checks.ts"

// ----------------------------------------------------------------------------------------------
// Triggers

export type Posture = "Reactive" | "Proactive"

export interface EventTrigger {
  readonly type: "event"
  readonly id: string
  readonly match: ResourceSpecification
  readonly match_related: ResourceSpecification | ReadonlyArray<ResourceSpecification>
  readonly after: ReadonlyArray<string>
  readonly expect: ReadonlyArray<string>
  readonly for_each: ReadonlyArray<string>
  readonly posture: Posture
  readonly threshold: number
  /** Seconds. */
  readonly within: number
}

export interface CompoundTrigger {
  readonly type: "compound"
  readonly id: string
  readonly triggers: ReadonlyArray<Trigger>
  readonly within: number | null
  readonly require: number | "any" | "all"
}

export interface SequenceTrigger {
  readonly type: "sequence"
  readonly id: string
  readonly triggers: ReadonlyArray<Trigger>
  readonly within: number | null
}

export type Trigger = EventTrigger | CompoundTrigger | SequenceTrigger
export type CompositeTrigger = CompoundTrigger | SequenceTrigger

/** Triggers and actions ignore fields they do not know (the automation body itself refuses them). */
const lenient = { parseOptions: { onExcessProperty: "ignore" as const } }

/** Sets of names: kept once each, in the order given. */
const setOf = (name: Schema.Schema<string>) =>
  Schema.optionalWith(
    Schema.transform(Schema.Array(name), Schema.Array(Schema.String), {
      strict: true,
      decode: (names) => [...new Set(names)],
      encode: (names) => names
    }),
    { default: () => [] }
  )
const NameSet = setOf(Schema.String)
/** Event name patterns (`*`, `?`, `!`), matched as resource labels are. */
const NamePatternSet = setOf(LabelPattern)

const triggerId = Schema.optionalWith(Id, { default: () => crypto.randomUUID() })

/** Proactive triggers need a window of at least 10 seconds (none given means 10). */
export const MIN_PROACTIVE_WITHIN = 10

const EventTriggerSchema = Schema.Struct({
  type: Schema.optionalWith(Schema.Literal("event"), { default: () => "event" as const }),
  id: triggerId,
  match: Schema.optionalWith(ResourceSpecification, { default: () => ({}) }),
  match_related: Schema.optionalWith(Schema.Union(ResourceSpecification, Schema.Array(ResourceSpecification)), {
    default: () => ({})
  }),
  after: NamePatternSet,
  expect: NamePatternSet,
  for_each: NameSet,
  posture: Schema.Literal("Reactive", "Proactive"),
  threshold: Schema.optionalWith(Lax.Int, { default: () => 1 }),
  within: Schema.optionalWith(Lax.float({ ge: 0, text: Lax.durationText }), { default: () => 0 })
}).pipe(
  Schema.filter((trigger) =>
    trigger.posture === "Proactive" && trigger.within !== 0 && trigger.within < MIN_PROACTIVE_WITHIN
      ? "`within` for Proactive triggers must be greater than or equal to 10 seconds"
      : true
  )
).annotations({ identifier: "EventTrigger", ...lenient })

const childTriggers = Schema.Array(Schema.suspend((): Schema.Schema<Trigger, any> => TriggerSchema).annotations({ identifier: "Trigger" }))
// The reference takes any window here; a negative one could never be met, so Baton refuses it.
const compositeWithin = Schema.NullOr(Lax.float({ ge: 0, text: Lax.durationText }))

const CompoundTriggerSchema = Schema.Struct({
  type: Schema.Literal("compound"),
  id: triggerId,
  triggers: childTriggers,
  within: compositeWithin,
  require: Schema.Union(Lax.Int, Schema.Literal("any", "all"))
}).pipe(
  Schema.filter((trigger) =>
    typeof trigger.require !== "number"
      ? true
      : trigger.require < 1
      ? "require must be at least 1"
      : trigger.require > trigger.triggers.length
      ? "require must be less than or equal to the number of triggers"
      : true
  )
).annotations({ identifier: "CompoundTrigger", ...lenient })

const SequenceTriggerSchema = Schema.Struct({
  type: Schema.Literal("sequence"),
  id: triggerId,
  triggers: childTriggers,
  within: compositeWithin
}).annotations({ identifier: "SequenceTrigger", ...lenient })

export const TriggerSchema: Schema.Schema<Trigger, any> = Schema.Union(
  EventTriggerSchema,
  CompoundTriggerSchema,
  SequenceTriggerSchema
) as any

// ----------------------------------------------------------------------------------------------
// Actions

const Source = Schema.optionalWith(Schema.Literal("selected", "inferred"), { default: () => "selected" as const })
const optionalId = Schema.optionalWith(Schema.NullOr(Id), { default: () => null })

/** A "selected" source names its target; an "inferred" one finds it in the triggering event. */
const selectedNeeds =
  (key: string) =>
  <A extends { readonly source: "selected" | "inferred" }, I>(self: Schema.Schema<A, I, never>) =>
    self.pipe(
      Schema.filter((action) => {
        const selected = action.source === "selected"
        const hasId = Boolean((action as unknown as Record<string, unknown>)[key])
        return selected === hasId ? true : `${key} is ${hasId ? "not allowed" : "required"}`
      })
    )

const deploymentTarget = { source: Source, deployment_id: optionalId }
const workQueueTarget = { source: Source, work_queue_id: optionalId }
const workPoolTarget = { source: Source, work_pool_id: optionalId }
const automationTarget = { source: Source, automation_id: optionalId }

/** A template field: it must parse and keep within the template limits. */
const template = (field: string) =>
  Schema.String.pipe(
    Schema.filter((source) => {
      const problem = validateTemplate(source)
      return problem === undefined ? true : `'${field}' is not a valid template: ${problem.message}`
    })
  )

/** Older clients send a webhook payload as an object; it is kept as its JSON text. */
const WebhookPayload = Schema.transform(Schema.Union(Schema.String, JsonObject), Schema.String, {
  strict: true,
  decode: (value) => (typeof value === "string" ? value : JSON.stringify(value, null, 2)),
  encode: (value) => value
})

const RunDeploymentParameters = Schema.NullOr(JsonObject).pipe(
  Schema.filter((parameters) => {
    const problems = parameters === null ? [] : parameterProblems(parameters)
    return problems.length === 0 ? true : `Invalid parameters: \n${problems.join("\n  ")}`
  })
)

const DoNothing = Schema.Struct({ type: Schema.Literal("do-nothing") }).annotations({ identifier: "DoNothing", ...lenient })
const RunDeployment = Schema.Struct({
  type: Schema.Literal("run-deployment"),
  source: Source,
  deployment_id: optionalId,
  parameters: Schema.optionalWith(RunDeploymentParameters, { default: () => null }),
  job_variables: Schema.optionalWith(Schema.NullOr(JsonObject), { default: () => null }),
  schedule_after: Schema.optionalWith(Lax.Float.pipe(Schema.filter((seconds) => seconds >= 0 || "schedule_after must be non-negative")), {
    default: () => 0
  })
}).pipe(selectedNeeds("deployment_id")).annotations({ identifier: "RunDeployment", ...lenient })
const PauseDeployment = Schema.Struct({ type: Schema.Literal("pause-deployment"), ...deploymentTarget }).pipe(selectedNeeds("deployment_id")).annotations({ identifier: "PauseDeployment", ...lenient })
const ResumeDeployment = Schema.Struct({ type: Schema.Literal("resume-deployment"), ...deploymentTarget }).pipe(selectedNeeds("deployment_id")).annotations({ identifier: "ResumeDeployment", ...lenient })
const CancelFlowRun = Schema.Struct({ type: Schema.Literal("cancel-flow-run") }).annotations({ identifier: "CancelFlowRun", ...lenient })
const DeleteFlowRun = Schema.Struct({ type: Schema.Literal("delete-flow-run") }).annotations({ identifier: "DeleteFlowRun", ...lenient })
const ChangeFlowRunState = Schema.Struct({
  type: Schema.Literal("change-flow-run-state"),
  name: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  state: StateType,
  message: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }),
  force: Schema.optionalWith(Lax.Bool, { default: () => false })
}).annotations({ identifier: "ChangeFlowRunState", ...lenient })
const PauseWorkQueue = Schema.Struct({ type: Schema.Literal("pause-work-queue"), ...workQueueTarget }).pipe(selectedNeeds("work_queue_id")).annotations({ identifier: "PauseWorkQueue", ...lenient })
const ResumeWorkQueue = Schema.Struct({ type: Schema.Literal("resume-work-queue"), ...workQueueTarget }).pipe(selectedNeeds("work_queue_id")).annotations({ identifier: "ResumeWorkQueue", ...lenient })
const SendNotification = Schema.Struct({
  type: Schema.Literal("send-notification"),
  block_document_id: Id,
  subject: Schema.optionalWith(template("subject"), { default: () => "Prefect automated notification" }),
  body: template("body")
}).annotations({ identifier: "SendNotification", ...lenient })
const CallWebhook = Schema.Struct({
  type: Schema.Literal("call-webhook"),
  block_document_id: Id,
  payload: Schema.optionalWith(
    WebhookPayload.pipe(
      Schema.filter((payload) => {
        const problem = payload === "" ? undefined : validateTemplate(payload)
        return problem === undefined ? true : `'payload' is not a valid template: ${problem.message}`
      })
    ),
    { default: () => "" }
  )
}).annotations({ identifier: "CallWebhook", ...lenient })
const PauseAutomation = Schema.Struct({ type: Schema.Literal("pause-automation"), ...automationTarget }).pipe(selectedNeeds("automation_id")).annotations({ identifier: "PauseAutomation", ...lenient })
const ResumeAutomation = Schema.Struct({ type: Schema.Literal("resume-automation"), ...automationTarget }).pipe(selectedNeeds("automation_id")).annotations({ identifier: "ResumeAutomation", ...lenient })
const SuspendFlowRun = Schema.Struct({ type: Schema.Literal("suspend-flow-run") }).annotations({ identifier: "SuspendFlowRun", ...lenient })
const ResumeFlowRun = Schema.Struct({ type: Schema.Literal("resume-flow-run") }).annotations({ identifier: "ResumeFlowRun", ...lenient })
const PauseWorkPool = Schema.Struct({ type: Schema.Literal("pause-work-pool"), ...workPoolTarget }).pipe(selectedNeeds("work_pool_id")).annotations({ identifier: "PauseWorkPool", ...lenient })
const ResumeWorkPool = Schema.Struct({ type: Schema.Literal("resume-work-pool"), ...workPoolTarget }).pipe(selectedNeeds("work_pool_id")).annotations({ identifier: "ResumeWorkPool", ...lenient })

export const ActionSchema = Schema.Union(
  DoNothing,
  RunDeployment,
  PauseDeployment,
  ResumeDeployment,
  CancelFlowRun,
  DeleteFlowRun,
  ChangeFlowRunState,
  PauseWorkQueue,
  ResumeWorkQueue,
  SendNotification,
  CallWebhook,
  PauseAutomation,
  ResumeAutomation,
  SuspendFlowRun,
  ResumeFlowRun,
  PauseWorkPool,
  ResumeWorkPool
)
export type Action = typeof ActionSchema.Type

// ----------------------------------------------------------------------------------------------
// Automations

const automationFields = {
  name: Schema.String,
  description: Schema.optionalWith(Schema.String, { default: () => "" }),
  enabled: Schema.optionalWith(Lax.Bool, { default: () => true }),
  tags: Schema.optionalWith(Schema.Array(Schema.String), { default: () => [] }),
  trigger: TriggerSchema.pipe(
    Schema.filter((trigger) => !nestedTooDeep(trigger) || tooDeep)
  ),
  actions: Schema.Array(ActionSchema),
  actions_on_trigger: Schema.optionalWith(Schema.Array(ActionSchema), { default: () => [] }),
  actions_on_resolve: Schema.optionalWith(Schema.Array(ActionSchema), { default: () => [] })
}

const AutomationCore = <Fields extends Schema.Struct.Fields>(fields: Fields, identifier: string) =>
  strictBody(fields, identifier).pipe(
    Schema.filter((automation) => runDeploymentLoop(automation as any) ?? true)
  ).annotations({ [PrecheckAnnotationId]: precheckTriggerDepth })

export const AutomationCreate = AutomationCore(
  { ...automationFields, owner_resource: Schema.optionalWith(Schema.NullOr(Schema.String), { default: () => null }) },
  "AutomationCreate"
)
export type AutomationCreate = typeof AutomationCreate.Type

/** PUT replaces the automation: what is left out takes its default. */
export const AutomationUpdate = AutomationCore(automationFields, "AutomationUpdate")
export type AutomationUpdate = typeof AutomationUpdate.Type

export const AutomationPartialUpdate = strictBody(
  { enabled: Schema.optionalWith(Lax.Bool, { default: () => true }) },
  "AutomationPartialUpdate"
)

export const Automation = Schema.Struct({
  id: Id,
  created: Schema.NullOr(Timestamp),
  updated: Schema.NullOr(Timestamp),
  name: Schema.String,
  description: Schema.String,
  enabled: Schema.Boolean,
  tags: Schema.Array(Schema.String),
  trigger: TriggerSchema,
  actions: Schema.Array(ActionSchema),
  actions_on_trigger: Schema.Array(ActionSchema),
  actions_on_resolve: Schema.Array(ActionSchema)
}).annotations({ identifier: "Automation" })
export type Automation = typeof Automation.Type

export const AutomationFilter = Filter.make("AutomationFilter", {
  name: Criterion.oneOf("AutomationFilterName", "automation.name", "text", Schema.String, ["any_"]),
  created: Criterion.time("AutomationFilterCreated", "automation.created", ["before_"]),
  tags: Criterion.tags("AutomationFilterTags", "automation.tags", ["operator", "all_", "any_", "is_null_"])
})
export type AutomationFilter = typeof AutomationFilter.Type

export const AutomationSort = Schema.Literal("CREATED_DESC", "UPDATED_DESC", "NAME_ASC", "NAME_DESC").annotations({
  identifier: "AutomationSort"
})
export type AutomationSort = typeof AutomationSort.Type

export const ReadAutomationsBody = Schema.Struct({
  sort: Schema.optionalWith(AutomationSort, { default: () => "NAME_ASC" as const }),
  limit: LimitField,
  offset: OffsetField,
  automations: criterion(AutomationFilter)
})
