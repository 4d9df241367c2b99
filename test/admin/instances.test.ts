import { describe, expect, it } from "@effect/vitest"
import { Duration, Effect, Layer, TestClock } from "effect"
import type { InstanceRow } from "../../src/admin/instances-repo.ts"
import { Leadership } from "../../src/database/leadership.ts"
import { crossProcessWarnings, registerInstance } from "../../src/services/instances.ts"
import { BackgroundServicesLive } from "../../src/services/registry.ts"
import { ok } from "../support/api.ts"
import { buildInServer, request, testServer } from "../support/server.ts"

const instance = (id: string, leaseStorage: string): InstanceRow => ({
  id,
  hostname: `host-${id}`,
  pid: 100,
  version: "0.1.0",
  started: new Date(0),
  heartbeat: new Date(0),
  serves_api: true,
  services: [],
  singletons: [],
  leads_services: [],
  lease_storage: leaseStorage,
  messaging_broker: "memory"
})

describe("the warnings of a process starting beside others", () => {
  it("name in-memory leases wherever they are, and nothing when alone or when every process shares them", () => {
    expect(crossProcessWarnings(instance("a", "memory"), [])).toEqual([])
    expect(crossProcessWarnings(instance("a", "database"), [instance("b", "database")])).toEqual([])
    const [mine] = crossProcessWarnings(instance("a", "memory"), [instance("b", "database")])
    expect(mine).toContain("by this process")
    expect(mine).toContain("host-b pid 100")
    const [theirs] = crossProcessWarnings(instance("a", "database"), [instance("b", "memory")])
    expect(theirs).toContain("kept in process memory (server.concurrency.lease_storage=memory) by host-b pid 100")
  })
})

describe("GET /admin/instances", () => {
  it.layer(testServer(), { timeout: 60_000 })((it) => {
    it.scoped("lists this process while it runs: what it serves and runs, what it leads; and no longer once it stops", () =>
      Effect.gen(function* () {
        expect(ok(yield* request("GET", "/admin/instances"), 200)).toEqual([])
        const registered = registerInstance({ servesApi: true, only: () => true }).pipe(
          Layer.provide(BackgroundServicesLive),
          Layer.provide(Leadership.Default)
        )
        const listed = yield* Effect.scoped(Effect.gen(function* () {
          yield* buildInServer(registered)
          // Registered, it says what it leads (a process whose settings name no server, like the embedded database's one process, leads whatever it runs).
          yield* TestClock.adjust(Duration.millis(1))
          const [self] = ok(yield* request("GET", "/admin/instances"), 200)
          expect(self).toMatchObject({ pid: process.pid, api: true, lease_storage: "memory", messaging_broker: "memory" })
          expect(self.services).toContain("scheduler")
          expect(self.services).toContain("event_persister")
          // What it runs that a process leads: the singletons, and the triggers' proactive part.
          expect(self.leads).toContain("scheduler")
          expect(self.leads).toContain("triggers")
          expect(self.leads).not.toContain("task_run_recorder")
          return self
        }))
        expect(listed.id).toEqual(expect.any(String))
        // Stopped: its row is gone.
        expect(ok(yield* request("GET", "/admin/instances"), 200)).toEqual([])
      })
    )
  })
})
