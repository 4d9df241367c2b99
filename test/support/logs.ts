/** A test server whose log lines are kept, whole, for a test to read. */
import { Cause, Layer, List, Logger, LogLevel } from "effect"
import type { SettingsOverrides } from "../../src/settings/settings.ts"
import { testServer, type TestServerOptions } from "./server.ts"

export interface LogLine {
  readonly level: string
  /** The message, and the cause's rendering when there is one. */
  readonly message: string
  readonly annotations: Record<string, unknown>
}

/** A test server with `overrides` (and another Api, if `api`), logging at `level` and above into `lines`. */
export const loggedServer = (
  lines: Array<LogLine>,
  overrides: SettingsOverrides = {},
  level: LogLevel.LogLevel = LogLevel.Warning,
  api?: TestServerOptions["api"]
) =>
  testServer({ overrides, ...(api ? { api } : {}) }).pipe(
    Layer.provide(Logger.replace(Logger.defaultLogger, Logger.make(({ annotations, cause, logLevel, message }) => {
      const parts = List.isList(message) ? List.toArray(message) : Array.isArray(message) ? message : [message]
      lines.push({
        level: logLevel.label,
        message: `${parts.map((part) => (typeof part === "string" ? part : JSON.stringify(part))).join(" ")}${Cause.isEmpty(cause) ? "" : ` ${Cause.pretty(cause)}`}`,
        annotations: Object.fromEntries([...annotations])
      })
    }))),
    Layer.provide(Logger.minimumLogLevel(level))
  )
