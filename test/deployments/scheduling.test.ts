import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { Schedule } from "../../src/deployments/schedules.ts"
import { scheduledDates, scheduledRunKey, scheduledRuns, type ScheduleWindow } from "../../src/deployments/scheduling.ts"

const decode = Schema.decodeUnknownSync(Schedule)
const now = new Date("2026-03-01T12:00:00Z")
const DAY = 86_400

/** The scheduler's defaults: 3 to 100 runs, at least an hour and at most 100 days ahead. */
const window = (overrides: Partial<ScheduleWindow> = {}): ScheduleWindow => ({
  start: now,
  end: new Date(now.getTime() + 100 * DAY * 1000),
  minTimeSeconds: 3600,
  minRuns: 3,
  maxRuns: 100,
  ...overrides
})

const interval = (seconds: number, anchor = new Date(now.getTime() + 1000)) =>
  decode({ interval: seconds, anchor_date: anchor.toISOString(), timezone: "UTC" })

describe("which runs a schedule asks for", () => {
  it.each([
    [60, 61],
    [300, 13],
    [3600, 3],
    [60 * DAY, 2]
  ])("an interval of %i s anchored a second from now gives %i runs", (seconds, expected) => {
    expect(scheduledDates(interval(seconds), window())).toHaveLength(expected)
  })

  it("honours min_runs, min_time, end and max_runs in the reference's order", () => {
    const daily = interval(DAY, new Date("2020-01-01T00:00:00Z"))
    const dates = scheduledDates(daily, window())
    expect(dates.map((d) => d.toISOString())).toEqual([
      "2026-03-02T00:00:00.000Z",
      "2026-03-03T00:00:00.000Z",
      "2026-03-04T00:00:00.000Z"
    ])
    expect(scheduledDates(daily, window({ minRuns: 5 }))).toHaveLength(5)
    expect(scheduledDates(daily, window({ minTimeSeconds: 17 * DAY }))).toHaveLength(18)
    expect(scheduledDates(daily, window({ end: new Date(now.getTime() + 17 * DAY * 1000), minRuns: 100 }))).toHaveLength(17)
    expect(scheduledDates(daily, window({ end: new Date(now.getTime() + 17 * DAY * 1000) }))).toHaveLength(3)
    expect(scheduledDates(interval(900, now), window({ maxRuns: 5 }))).toHaveLength(5)
    const backfill = scheduledDates(daily, window({ start: new Date(now.getTime() - 20 * DAY * 1000), end: now, minRuns: 100 }))
    expect(backfill).toHaveLength(20)
    expect(backfill.every((d) => d <= now)).toBe(true)
  })

  it("keys a scheduled run by deployment, schedule and the date as the reference prints it", () => {
    expect(scheduledRunKey("d", "s", new Date("2026-03-29T07:00:00Z"), "Europe/Berlin")).toBe("scheduled d s 2026-03-29 09:00:00+02:00")
    expect(scheduledRunKey("d", "s", new Date("2026-01-01T00:00:00.250Z"), null)).toBe(
      "scheduled d s 2026-01-01 00:00:00.250000+00:00"
    )
  })

  it("builds runs from the deployment and each schedule, the schedule's parameters winning", () => {
    const deployment = {
      id: "dep",
      flow_id: "flow",
      version: "3",
      parameters: { a: 1, b: 1 },
      tags: ["t"],
      labels: { env: "prod" },
      work_queue_name: "q",
      work_queue_id: "qid",
      infrastructure_document_id: null
    }
    const schedules = [
      { id: "s1", schedule: interval(3600), parameters: { b: 2 }, slug: "hourly", max_scheduled_runs: null },
      { id: "s2", schedule: decode({ cron: "0 0 * * *" }), parameters: {}, slug: null, max_scheduled_runs: null }
    ]
    const options = { autoScheduled: true, defaultMaxRuns: 50 }
    const runs = scheduledRuns(deployment, schedules, window({ minRuns: 1, minTimeSeconds: 0 }), options)
    expect(runs).toHaveLength(2)
    expect(runs[0]).toMatchObject({
      flow_id: "flow",
      deployment_id: "dep",
      deployment_version: "3",
      parameters: { a: 1, b: 2 },
      tags: ["auto-scheduled", "t"],
      labels: { env: "prod", "prefect.flow.id": "flow", "prefect.deployment.id": "dep" },
      work_queue_name: "q",
      work_queue_id: "qid",
      auto_scheduled: true,
      created_by: { id: "s1", type: "SCHEDULE", display_value: "hourly" }
    })
    expect(runs[1]!.created_by.display_value).toBe("CronSchedule")
    expect(runs[1]!.scheduled_time.toISOString()).toBe("2026-03-02T00:00:00.000Z")
    const manual = scheduledRuns(deployment, schedules, window({ minRuns: 1, minTimeSeconds: 0 }), { ...options, autoScheduled: false })
    expect(manual[0]!.tags).toEqual(["t"])
    expect(manual[0]!.auto_scheduled).toBe(false)
  })

  it("caps each schedule at its own max_scheduled_runs, else the server's", () => {
    const minutely = { id: "m", schedule: interval(60), parameters: {}, slug: null, max_scheduled_runs: null }
    const deployment = {
      id: "d",
      flow_id: "f",
      version: null,
      parameters: {},
      tags: [],
      labels: null,
      work_queue_name: null,
      work_queue_id: null,
      infrastructure_document_id: null
    }
    // An hour of minutely runs is 61; the server keeps at most 50 ahead, a schedule may ask for fewer.
    expect(scheduledRuns(deployment, [minutely], window(), { autoScheduled: true, defaultMaxRuns: 50 })).toHaveLength(50)
    expect(scheduledRuns(deployment, [{ ...minutely, max_scheduled_runs: 7 }], window(), { autoScheduled: true, defaultMaxRuns: 50 }))
      .toHaveLength(7)
    expect(scheduledRuns(deployment, [minutely], window({ maxRuns: 20 }), { autoScheduled: true, defaultMaxRuns: 50 })).toHaveLength(20)
  })
})
