// Keeping the young generation below a size (used by bin/baton.mjs). Node is started with a larger
// maximum (its first lines); a process on the embedded database stops the growth at node's usual
// size. Kept apart from bin/baton.mjs so it is testable alone.
import { PerformanceObserver } from "node:perf_hooks"
import * as v8 from "node:v8"

/** Bytes the young generation holds now, both of its halves. */
export const youngGenerationBytes = () =>
  v8.getHeapSpaceStatistics().find((space) => space.space_name === "new_space")?.space_size ?? 0

/**
 * Stops the young generation growing once it holds `bytes`, checked after each collection: from
 * then on V8 grows it by a factor of 1, and the watching ends.
 */
export const stopYoungGrowthAt = (bytes) => {
  const observer = new PerformanceObserver(() => {
    if (youngGenerationBytes() < bytes) return
    v8.setFlagsFromString("--semi-space-growth-factor=1")
    observer.disconnect()
  })
  observer.observe({ entryTypes: ["gc"] })
}
