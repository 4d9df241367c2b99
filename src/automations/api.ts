import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { DeploymentNotFoundResponse } from "../deployments/errors.ts"
import { TemplateBody, TemplateInvalidResponse } from "../templates/api.ts"
import { AutomationNotFoundResponse } from "./errors.ts"
import { Automation, AutomationCreate, AutomationPartialUpdate, AutomationUpdate, ReadAutomationsBody } from "./schemas.ts"

const IdPath = Schema.Struct({ id: Id })
const ResourcePath = Schema.Struct({ resource_id: Schema.String })

export class AutomationsApi extends HttpApiGroup.make("automations")
  .add(HttpApiEndpoint.post("create", "/").setPayload(AutomationCreate).addSuccess(Automation, { status: 201 }))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadAutomationsBody).addSuccess(Schema.Array(Automation)))
  .add(HttpApiEndpoint.post("count", "/count").addSuccess(Schema.Int))
  .add(
    HttpApiEndpoint.post("validateTemplate", "/templates/validate")
      .setPayload(TemplateBody)
      .addSuccess(Schema.Void)
      .addError(TemplateInvalidResponse)
  )
  .add(HttpApiEndpoint.get("relatedTo", "/related-to/:resource_id").setPath(ResourcePath).addSuccess(Schema.Array(Automation)))
  // 202 with a JSON `null`, as the reference's handler (which returns nothing) answers.
  .add(HttpApiEndpoint.del("deleteOwnedBy", "/owned-by/:resource_id").setPath(ResourcePath).addSuccess(Schema.Null, { status: 202 }))
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(Automation))
  .add(HttpApiEndpoint.put("replace", "/:id").setPath(IdPath).setPayload(AutomationUpdate).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.patch("update", "/:id").setPath(IdPath).setPayload(AutomationPartialUpdate).addSuccess(Schema.Void))
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Void))
  .addError(AutomationNotFoundResponse)
  // A run-deployment action names a deployment that must exist.
  .addError(DeploymentNotFoundResponse)
  .prefix("/automations")
{}
