/**
 * How bin/baton.mjs keeps the young generation of a process on the embedded database at node's usual
 * size while node is started with a larger maximum: the growth stops once it holds the size asked.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import { Effect } from "effect"

const MODULE = new URL("../bin/young-generation.mjs", import.meta.url).href
const MiB = 1024 * 1024

/** The young generation's size after a process with a 64MB maximum semi-space allocated for a while, capped at `capMiB` or not. */
const grownTo = (capMiB: number | null) => {
  const script = `
    import * as v8 from "node:v8"
    import { stopYoungGrowthAt, youngGenerationBytes } from ${JSON.stringify(MODULE)}
    v8.setFlagsFromString("--semi-space-growth-factor=2")
    ${capMiB === null ? "" : `stopYoungGrowthAt(${capMiB * MiB})`}
    const kept = []
    for (let round = 0; round < 200; round++) {
      for (let i = 0; i < 20000; i++) { kept.push({ i, list: [i] }); if (kept.length > 300000) kept.splice(0, 100000) }
      // A turn of the event loop between bursts, as a server takes between requests.
      await new Promise((resolve) => setImmediate(resolve))
    }
    console.log(youngGenerationBytes())
  `
  const result = spawnSync(process.execPath, ["--max-semi-space-size=64", "--input-type=module", "-e", script], { encoding: "utf8" })
  expect(result.status, result.stderr).toBe(0)
  return Number(result.stdout.trim())
}

describe("the young generation", () => {
  it.live("stops growing at the size asked, where it would otherwise grow to its maximum", () =>
    Effect.sync(() => {
      expect(grownTo(null)).toBeGreaterThanOrEqual(64 * MiB)
      // Checked after each collection: it may take one more step before the check runs.
      const capped = grownTo(8)
      expect(capped).toBeGreaterThanOrEqual(8 * MiB)
      expect(capped).toBeLessThanOrEqual(16 * MiB)
    })
  )
})
