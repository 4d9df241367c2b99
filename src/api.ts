/**
 * The one Api: a group per area. Clients derive typed clients from it (HttpApiClient), the server
 * derives its routes and the OpenAPI document from it.
 */
import { HttpApi, OpenApi } from "@effect/platform"
import { AdminApi } from "./admin/api.ts"
import { ConcurrencyLimitsApi, ConcurrencyLimitsV2Api } from "./concurrency/api.ts"
import { DeploymentsApi } from "./deployments/api.ts"
import { LogsApi } from "./logs/api.ts"
import { ArtifactsApi } from "./artifacts/api.ts"
import { CollectionsApi } from "./collections/api.ts"
import { CsrfApi } from "./csrf/api.ts"
import { TemplatesApi } from "./templates/api.ts"
import { EventsApi } from "./events/api.ts"
import { AutomationsApi } from "./automations/api.ts"
import { BlockCapabilitiesApi, BlockDocumentsApi, BlockSchemasApi, BlockTypesApi } from "./blocks/api.ts"
import { SavedSearchesApi } from "./saved-searches/api.ts"
import { VariablesApi } from "./variables/api.ts"
import { TaskWorkersApi } from "./task-workers/api.ts"
import { WorkPoolsApi } from "./work-pools/api.ts"
import { WorkQueuesApi } from "./work-queues/api.ts"
import { FlowRunStatesApi, FlowRunsApi } from "./flow-runs/api.ts"
import { FlowsApi } from "./flows/api.ts"
import { TaskRunStatesApi, TaskRunsApi } from "./task-runs/api.ts"
import { RootApi } from "./root/api.ts"
import { UiFlowRunsApi, UiFlowsApi, UiSchemasApi, UiTaskRunsApi } from "./ui/api.ts"
import { API_VERSION } from "./version.ts"
import {
  BadRequestResponse,
  ConflictResponse,
  ForbiddenResponse,
  GoneResponse,
  MethodNotAllowedResponse,
  NotFoundResponse,
  PayloadTooLargeResponse,
  RequestHeaderFieldsTooLargeResponse,
  RequestTimeoutResponse,
  ServiceUnavailableResponse,
  UnauthorizedResponse,
  ValidationErrorResponse
} from "./http/errors.ts"

export class BatonApi extends HttpApi.make("baton")
  .add(RootApi)
  .add(AdminApi)
  .add(FlowsApi)
  .add(FlowRunsApi)
  .add(FlowRunStatesApi)
  .add(TaskRunsApi)
  .add(TaskRunStatesApi)
  .add(DeploymentsApi)
  .add(WorkPoolsApi)
  .add(WorkQueuesApi)
  .add(TaskWorkersApi)
  .add(ConcurrencyLimitsApi)
  .add(ConcurrencyLimitsV2Api)
  .add(VariablesApi)
  .add(SavedSearchesApi)
  .add(LogsApi)
  .add(ArtifactsApi)
  .add(BlockTypesApi)
  .add(BlockSchemasApi)
  .add(BlockDocumentsApi)
  .add(BlockCapabilitiesApi)
  .add(CsrfApi)
  .add(CollectionsApi)
  .add(TemplatesApi)
  .add(EventsApi)
  .add(AutomationsApi)
  .add(UiFlowsApi)
  .add(UiFlowRunsApi)
  .add(UiTaskRunsApi)
  .add(UiSchemasApi)
  .addError(ValidationErrorResponse)
  .addError(NotFoundResponse)
  .addError(ConflictResponse)
  .addError(BadRequestResponse)
  .addError(ForbiddenResponse)
  .addError(GoneResponse)
  .addError(MethodNotAllowedResponse)
  .addError(ServiceUnavailableResponse)
  // Answered in front of the Api (http/auth.ts, http/limits.ts); declared so clients and the OpenAPI document know them.
  .addError(UnauthorizedResponse)
  .addError(PayloadTooLargeResponse)
  // Answered by the HTTP server itself (http/node-server.ts): a request too slow to arrive, a head over 16 KB.
  .addError(RequestTimeoutResponse)
  .addError(RequestHeaderFieldsTooLargeResponse)
  .annotate(OpenApi.Title, "Baton REST API")
  .annotate(OpenApi.Version, API_VERSION)
{}
