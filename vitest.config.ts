import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Two cores: more workers than that only adds contention on the embedded databases.
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } }
  }
})
