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

/**
 * The most characters of a run's name put in the file name: a name of many kilobytes would make a
 * header larger than clients read (16 KB for most), and no file system takes such a name anyway.
 */
const MAX_NAME_IN_FILE_NAME = 200

/** `<name>-logs.csv` percent-encoded as RFC 5987 asks (everything but letters, digits and `_.-~`). */
export const contentDisposition = (runName: string) => {
  // Whole characters only: a surrogate pair is not split.
  const name = Array.from(runName).slice(0, MAX_NAME_IN_FILE_NAME).join("")
  const encoded = encodeURIComponent(`${name}-logs.csv`).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)
  return `attachment; filename="flow-run-logs.csv"; filename*=UTF-8''${encoded}`
}
