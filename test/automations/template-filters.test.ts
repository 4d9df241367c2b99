import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { templateFilters } from "../../src/automations/template-filters.ts"
import { renderTemplate } from "../../src/domain/templates.ts"

const filters = templateFilters("http://baton.example:4200/")
const render = (source: string, context: Record<string, unknown>) => Either.getOrThrow(renderTemplate(source, context, filters))

describe("the automation template filters", () => {
  it("ui_url links the UI page of the object or event; ui_resource_events_url its events", () => {
    const context = {
      flow_run: { id: "r1", flow_id: "f1", run_count: 1, name: "run" },
      deployment: { id: "d1", flow_id: "f1", entrypoint: "x.py:f", schedules: [] },
      work_pool: { id: "p1", name: "pool a", base_job_template: {} },
      automation: { id: "a1", trigger: {}, actions: [] },
      event: { id: "e1", event: "x", occurred: "2026-11-24T10:00:00Z", resource: { "prefect.resource.id": "prefect.flow-run.r1" } },
      nothing: { colour: "blue" }
    }
    expect(render("{{ flow_run | ui_url }}", context)).toBe("http://baton.example:4200/runs/flow-run/r1")
    expect(render("{{ deployment | ui_url }}", context)).toBe("http://baton.example:4200/deployments/deployment/d1")
    expect(render("{{ work_pool | ui_url }}", context)).toBe("http://baton.example:4200/work-pools/work-pool/pool%20a")
    expect(render("{{ event | ui_url }}", context)).toBe("http://baton.example:4200/events/event/2026-11-24/e1")
    expect(render("{{ event.resource | ui_url }}", context)).toBe("http://baton.example:4200/runs/flow-run/r1")
    expect(render("{{ automation | ui_resource_events_url }}", context)).toBe("http://baton.example:4200/events?resource=prefect.automation.a1")
    expect(render("{{ event.resource | ui_resource_events_url }}", context)).toBe("http://baton.example:4200/events?resource=prefect.flow-run.r1")
    // Unknown objects give nothing; the engine's own filters still work beside them.
    expect(render("[{{ nothing | ui_url }}] {{ flow_run.name | upper }}", context)).toBe("[] RUN")
  })
})
