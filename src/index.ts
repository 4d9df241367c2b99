/**
 * Baton as a library: the Layers that make up the server, the Api (derive a typed client with
 * `HttpApiClient.make(BatonApi, { baseUrl })`) and the settings.
 */
export { BatonApi } from "./api.ts"
/** The errors the Api answers with (NotFound, Conflict, ValidationError …), as a typed client fails with them. */
export * as Errors from "./domain/errors.ts"
/** Their wire forms with statuses, and the protocol's own errors (401, 405, 413 …). */
export * as HttpErrors from "./http/errors.ts"
export {
  apiServer,
  apiServerWith,
  ApiLive,
  DatabaseLive,
  HandlersLive,
  HttpServerLive,
  serveApi,
  servicesServer,
  ServicesLive
} from "./server.ts"
export {
  layer as SettingsLayer,
  leaves as settingsKeys,
  loadSettings,
  Settings,
  SettingsError,
  settingsReport,
  type SettingsOverrides,
  type SettingsValue
} from "./settings/settings.ts"
export * as Database from "./database/client.ts"
export * as Migrator from "./database/migrator.ts"
/** Which process leads the singleton services (`Leadership.Default`), or none (`Leadership.never`). */
export { Leadership } from "./database/leadership.ts"
export { defineService, runServices, type BackgroundService } from "./services/runner.ts"
export { Transitions, type StateTransition } from "./orchestration/transitions.ts"
export { API_VERSION, BATON_VERSION, COMPATIBLE_SERVER_VERSION } from "./version.ts"
