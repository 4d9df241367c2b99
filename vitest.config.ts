import { defineConfig } from "vitest/config"
import SlowFirst from "./test/support/sequencer.ts"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    setupFiles: ["test/support/setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: more workers than that only adds contention on the embedded databases.
    pool: "forks",
    // A worker's files share one module graph: importing the whole server again for every file
    // cost most of the run. test/support/setup.ts puts back what a file changes in a shared module.
    poolOptions: { forks: { maxForks: 2, minForks: 1, isolate: false } },
    // The slowest files first, so that they do not run alone at the end.
    sequence: { sequencer: SlowFirst }
  }
})
