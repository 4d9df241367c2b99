// Types of bin/quiet-compaction.mjs, for the TypeScript that imports it (its test).
export declare const QUIET_CHECK_MS: number
export declare const QUIET_CPU_SHARE: number
export declare const QUIET_READINGS: number
export declare const GROWTH_WORTH_COMPACTING: number

export interface QuietState {
  readonly quietReadings: number
  readonly heapAfterCompaction: number
}

export interface Reading {
  readonly heapBytes: number
  readonly cpuMicros: number
  readonly intervalMs: number
}

export declare const afterReading: (state: QuietState, reading: Reading) => { readonly state: QuietState; readonly compact: boolean }

export declare const compactWhenQuiet: (
  compact: () => number,
  read: () => { readonly heapBytes: number; readonly cpuMicros: number; readonly atMs: number }
) => () => void
