// When to compact the heap again after a burst of work (used by bin/baton.mjs).
//
// A burst of requests leaves the old generation large and mostly garbage; V8's memory reducer gives
// it back only after 30 to 60 s of idling, and not at all while background services keep allocating
// a little. One compacting collection once the process has gone quiet gives it back within seconds
// (docs/operations.md, "Memory"). Kept apart from bin/baton.mjs so the decision is testable alone.

/** Readings are taken this often (ms). */
export const QUIET_CHECK_MS = 2000
/** A reading with less CPU than this share of its interval counts as quiet. */
export const QUIET_CPU_SHARE = 0.05
/** Quiet readings in a row before compacting: the burst has really stopped. */
export const QUIET_READINGS = 2
/** Growth of the heap since the last compaction that makes compacting worth its pause (bytes). */
export const GROWTH_WORTH_COMPACTING = 16 * 1024 * 1024

/**
 * The next state after one reading, and whether to compact now. `heapBytes` is V8's total heap;
 * `cpuMicros` the process's CPU over the reading's interval of `intervalMs`.
 */
export const afterReading = (state, reading) => {
  const quiet = reading.cpuMicros < reading.intervalMs * 1000 * QUIET_CPU_SHARE
  const quietReadings = quiet ? state.quietReadings + 1 : 0
  const grown = reading.heapBytes - state.heapAfterCompaction >= GROWTH_WORTH_COMPACTING
  const compact = quietReadings >= QUIET_READINGS && grown
  return { state: { quietReadings: compact ? 0 : quietReadings, heapAfterCompaction: state.heapAfterCompaction }, compact }
}

/**
 * Watches the process and calls `compact` (which returns the heap size after it) once it has gone
 * quiet after growing its heap. The timer never keeps the process alive.
 */
export const compactWhenQuiet = (compact, read) => {
  let state = { quietReadings: 0, heapAfterCompaction: read().heapBytes }
  let last = read()
  const timer = setInterval(() => {
    const now = read()
    const next = afterReading(state, {
      heapBytes: now.heapBytes,
      cpuMicros: now.cpuMicros - last.cpuMicros,
      intervalMs: now.atMs - last.atMs
    })
    last = now
    state = next.state
    if (next.compact) {
      const heapBytes = compact()
      state = { quietReadings: 0, heapAfterCompaction: heapBytes }
      last = read()
    }
  }, QUIET_CHECK_MS)
  timer.unref()
  return () => clearInterval(timer)
}
