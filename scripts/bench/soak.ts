/**
 * `npm run bench:soak`: the run lifecycle driven for a long stretch (10 minutes unless
 * --minutes says otherwise) against a fresh database, with the server's RSS sampled along the way,
 * to show memory does not grow under steady load.
 *
 *   npm run bench:soak [-- --minutes 10] [--workers 8] [--pg postgresql://postgres@127.0.0.1:5432]
 */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import pg from "pg"
import { jsonClient } from "./load.ts"
import { soak } from "./main.ts"
import { machine, save, table } from "./report.ts"
import { startServer } from "./startup.ts"

const argument = (name: string, fallback: string): string => {
  const at = process.argv.indexOf(`--${name}`)
  return at === -1 ? fallback : process.argv[at + 1] ?? fallback
}

const minutes = Number(argument("minutes", "10"))
const workers = Number(argument("workers", "8"))
const pgUrl = argument("pg", process.env.BENCH_PG_URL ?? "postgresql://postgres@127.0.0.1:5432").replace(/\/$/, "")
const port = Number(argument("port", "4360"))
const DATABASE = "baton_soak"

const run = async () => {
  const admin = new pg.Client({ connectionString: `${pgUrl}/postgres` })
  await admin.connect()
  await admin.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`)
  await admin.query(`CREATE DATABASE ${DATABASE}`)
  await admin.end()
  const server = await startServer({
    home: fs.mkdtempSync(path.join(os.tmpdir(), "baton-soak-")),
    port,
    databaseUrl: `${pgUrl}/${DATABASE}`,
    stdio: "inherit",
    timeoutMs: 120_000
  })
  try {
    console.log(`soak: ${minutes} min, ${workers} workers, on ${JSON.stringify(machine())}`)
    const soaked = await soak(server, jsonClient(`http://127.0.0.1:${port}/v2/api`), minutes, workers)
    for (const sample of soaked.samples) console.log(`  ${sample.at.toFixed(0).padStart(5)} s  ${sample.rssMiB.toFixed(0)} MiB`)
    const row = {
      scenario: `lifecycle soak, ${minutes} min`,
      throughput: soaked.result.throughput,
      unit: "runs/s",
      p50: soaked.result.p50,
      p99: soaked.result.p99,
      rssMiB: soaked.samples.at(-1)?.rssMiB ?? 0,
      target: "no RSS growth",
      met: soaked.growth < 10,
      note: `RSS ${soaked.early.toFixed(0)} → ${soaked.late.toFixed(0)} MiB (2nd vs last quarter of the samples); ${soaked.result.count} runs`
    }
    console.log(`\n${table([row])}`)
    console.log(`results: ${save({ machine: machine(), minutes, workers, samples: soaked.samples, row })}`)
  } finally {
    await server.stop()
  }
}

run().then(
  () => process.exit(0),
  (error) => {
    console.error(error)
    process.exit(1)
  }
)
