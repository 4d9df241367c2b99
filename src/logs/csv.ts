/** A flow run's logs as the CSV file the reference serves (Python's csv module's dialect). */
import { pythonDate } from "../domain/time.ts"
import type { Log } from "./schemas.ts"

export const CSV_HEADER = "timestamp,level,flow_run_id,task_run_id,message\r\n"

/** Quoted only when it must be: a comma, a quote or a line break inside. */
const field = (value: string) => (/[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value)

export const csvRows = (logs: ReadonlyArray<Log>) =>
  logs
    .map((log) =>
      [pythonDate(log.timestamp), String(log.level), log.flow_run_id ?? "", log.task_run_id ?? "", field(log.message)].join(",") + "\r\n"
    )
    .join("")

/** `<name>-logs.csv` percent-encoded as RFC 5987 asks (everything but letters, digits and `_.-~`). */
export const contentDisposition = (runName: string) => {
  const encoded = encodeURIComponent(`${runName}-logs.csv`).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `attachment; filename="flow-run-logs.csv"; filename*=UTF-8''${encoded}`
}
