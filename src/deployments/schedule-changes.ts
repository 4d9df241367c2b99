/**
 * A deployment's schedules: checked against the settings' cap, interval schedules anchored when
 * made, replaced or patched by slug (PATCH /deployments/{id}), and added, updated and deleted one
 * by one (the schedule routes); each change removes the auto-scheduled runs it makes stale.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { inTransaction } from "../database/errors.ts"
import { orFail } from "../domain/errors.ts"
import { now } from "../domain/time.ts"
import { Settings } from "../settings/settings.ts"
import { DeploymentConflict, deploymentNotFoundDot, ScheduleNotFound, unprocessable, valueError } from "./errors.ts"
import { DeploymentsRepo, type NewSchedule } from "./repo.ts"
import { type Schedule, Schedule as ScheduleSchema } from "./schedules.ts"
import type { DeploymentScheduleCreate, DeploymentScheduleUpdate } from "./schemas.ts"
import { traced } from "../domain/traced.ts"

const encodeSchedule = Schema.encodeSync(ScheduleSchema)
const decodeSchedule = Schema.decodeSync(ScheduleSchema)

/** The schedule rules. */
export const makeScheduleChanges = Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  const repo = yield* DeploymentsRepo
  const settings = yield* Settings
  const maxScheduledRuns = settings.server.deployment_schedule_max_scheduled_runs

  /** An interval schedule keeps the moment it was made as its anchor, and says its zone. */
  const normaliseSchedule = (schedule: Schedule, at: Date): Schedule =>
    "interval" in schedule
      ? decodeSchedule({ ...encodeSchedule(schedule), anchor_date: (schedule.anchor_date ?? at).toISOString(), timezone: schedule.timezone ?? "UTC" })
      : schedule

  const checkScheduleLimits = (
    schedules: ReadonlyArray<{ readonly max_scheduled_runs?: number | null | undefined }>,
    loc: ReadonlyArray<string | number>
  ) =>
    Effect.forEach(schedules, (s, i) =>
      s.max_scheduled_runs != null && s.max_scheduled_runs > maxScheduledRuns
        ? Effect.fail(valueError([...loc, i, "max_scheduled_runs"], `\`max_scheduled_runs\` must be less than or equal to ${maxScheduledRuns}.`))
        : Effect.void
    )

  const newSchedules = (schedules: ReadonlyArray<{
    readonly schedule: Schedule
    readonly active?: boolean | null | undefined
    readonly parameters?: Record<string, unknown> | undefined
    readonly slug?: string | null | undefined
    readonly max_scheduled_runs?: number | null | undefined
  }>, at: Date): Array<NewSchedule> =>
    schedules.map((s) => ({
      schedule: normaliseSchedule(s.schedule, at),
      active: s.active ?? true,
      parameters: s.parameters ?? {},
      slug: s.slug ?? null,
      max_scheduled_runs: s.max_scheduled_runs ?? null
    }))

  /** The schedule changes a PATCH asks for, planned before anything is written. */
  type SchedulePlan =
    | { readonly mode: "none" }
    | { readonly mode: "replace"; readonly schedules: ReadonlyArray<DeploymentScheduleUpdate> }
    | {
      readonly mode: "slugs"
      readonly patches: ReadonlyArray<{ readonly target: string; readonly rename: boolean; readonly update: DeploymentScheduleUpdate }>
      readonly creates: ReadonlyArray<DeploymentScheduleUpdate>
    }

  const planSchedules = (provided: ReadonlyArray<DeploymentScheduleUpdate> | undefined, existing: ReadonlyArray<{ readonly slug: string | null }>) =>
    Effect.gen(function* () {
      const list = provided ?? []
      const providedHaveSlugs = list.every((p) => p.slug != null)
      const existingHaveSlugs = existing.length > 0 && existing.every((s) => s.slug !== null)
      if (providedHaveSlugs && existingHaveSlugs) {
        const slugs = new Set(existing.map((s) => s.slug!))
        const replaced = new Set<string>()
        for (const p of list) {
          if (p.replaces == null) continue
          if (replaced.has(p.replaces)) {
            return yield* unprocessable(`Multiple schedules have 'replaces' targeting the same slug: ${p.replaces}`)
          }
          replaced.add(p.replaces)
        }
        for (const p of list) {
          if (p.replaces != null && slugs.has(p.slug!) && !replaced.has(p.slug!)) {
            return yield* unprocessable(
              `Cannot rename schedule from '${p.replaces}' to '${p.slug}': a schedule with slug '${p.slug}' already exists.`
            )
          }
        }
        const patches = []
        const creates = []
        for (const p of list) {
          const target = p.replaces ?? p.slug!
          if (slugs.has(target)) {
            patches.push({ target, rename: p.replaces != null, update: p })
          } else if (p.schedule != null) {
            creates.push(p)
          } else {
            return yield* unprocessable("Unable to create new deployment schedules without a schedule configuration.")
          }
        }
        return { mode: "slugs" as const, patches, creates }
      }
      if (existingHaveSlugs && !providedHaveSlugs) {
        return yield* unprocessable("Please provide a slug for each schedule in your request to ensure schedules are updated correctly.")
      }
      return provided === undefined ? { mode: "none" as const } : { mode: "replace" as const, schedules: list }
    })

  /** Applies a planned schedule change to a deployment (inside the PATCH's transaction). */
  const applySchedules = (deploymentId: string, plan: SchedulePlan, at: Date) =>
    Effect.gen(function* () {
      if (plan.mode === "none") return
      if (plan.mode === "replace") {
        yield* repo.deleteSchedules(deploymentId)
        const kept = plan.schedules.filter((s): s is DeploymentScheduleUpdate & { schedule: Schedule } => s.schedule != null)
        yield* repo.createSchedules(deploymentId, newSchedules(kept, at))
        return
      }
      // Renamed schedules first give up their slugs, so swaps and chains never collide.
      const existing = yield* repo.readSchedules(deploymentId)
      const idOf = new Map(existing.map((s) => [s.slug, s.id]))
      const renames = []
      for (const p of plan.patches.filter((p) => p.rename)) {
        const id = idOf.get(p.target)
        if (id === undefined) return yield* new ScheduleNotFound({ detail: `Schedule with slug '${p.target}' no longer exists.` })
        renames.push({ id, update: p.update })
        yield* repo.updateSchedule(deploymentId, { id }, { slug: null })
      }
      for (const { id, update } of renames) yield* repo.updateSchedule(deploymentId, { id }, scheduleChanges(update, at))
      for (const p of plan.patches.filter((p) => !p.rename)) {
        yield* repo.updateSchedule(deploymentId, { slug: p.target }, scheduleChanges(p.update, at))
      }
      const creates = plan.creates as ReadonlyArray<DeploymentScheduleUpdate & { schedule: Schedule }>
      yield* repo.createSchedules(deploymentId, newSchedules(creates, at))
    })

  /** The non-null fields of a schedule update; parameters are always written ({} when omitted). */
  const scheduleChanges = (update: DeploymentScheduleUpdate, at: Date) => ({
    ...(update.schedule != null ? { schedule: normaliseSchedule(update.schedule, at) } : {}),
    ...(update.active != null ? { active: update.active } : {}),
    ...(update.max_scheduled_runs != null ? { max_scheduled_runs: update.max_scheduled_runs } : {}),
    ...(update.slug != null ? { slug: update.slug } : {}),
    parameters: update.parameters ?? {}
  })

  /** The schedule routes' deployment: "Deployment not found." without it. */
  const requireDeployment = (id: string) => repo.find(id).pipe(orFail(deploymentNotFoundDot))

  const listSchedules = (id: string) => Effect.map(requireDeployment(id), (deployment) => deployment.schedules)

  /** Adds schedules; slugs must stay unique within the deployment. Answers them in request order. */
  const createSchedules = traced("Deployments.createSchedules")(function* (id: string, schedules: ReadonlyArray<DeploymentScheduleCreate>) {
    yield* checkScheduleLimits(schedules, [])
    yield* requireDeployment(id)
    const at = yield* now
    // A slug taken is ScheduleSlugTaken; a deployment deleted since it was read, "Deployment not found.".
    return yield* repo.createSchedules(id, newSchedules(schedules, at))
  })

  const updateSchedule = traced("Deployments.updateSchedule")(function* (id: string, scheduleId: string, body: DeploymentScheduleUpdate) {
    yield* checkScheduleLimits([body], [])
    yield* requireDeployment(id)
    const at = yield* now
    const found = yield* inTransaction(sql, Effect.gen(function* () {
      if (!(yield* repo.updateSchedule(id, { id: scheduleId }, scheduleChanges(body, at)))) return false
      yield* repo.deleteScheduledRuns(id, { autoScheduledOnly: true, after: at })
      return true
    })).pipe(
      // Here the reference answers a slug taken with its integrity conflict.
      Effect.catchTag("ScheduleSlugTaken", () => new DeploymentConflict())
    )
    if (!found) return yield* new ScheduleNotFound()
  })

  const deleteSchedule = traced("Deployments.deleteSchedule")(function* (id: string, scheduleId: string) {
    yield* requireDeployment(id)
    const found = yield* inTransaction(sql, Effect.gen(function* () {
      if ((yield* repo.deleteSchedules(id, scheduleId)) === 0) return false
      yield* repo.deleteScheduledRuns(id, { autoScheduledOnly: true })
      return true
    }))
    if (!found) return yield* new ScheduleNotFound()
  })

  return { checkScheduleLimits, newSchedules, planSchedules, applySchedules, listSchedules, createSchedules, updateSchedule, deleteSchedule } as const
})
