import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { Id } from "../domain/ids.ts"
import { SavedSearchNotFoundResponse } from "./errors.ts"
import { ReadSavedSearchesBody, SavedSearch, SavedSearchCreate } from "./schemas.ts"

const IdPath = Schema.Struct({ id: Id })

export class SavedSearchesApi extends HttpApiGroup.make("savedSearches")
  // 201 when the search was created, 200 when one of that name got the new filters.
  .add(HttpApiEndpoint.put("upsert", "/").setPayload(SavedSearchCreate).addSuccess(SavedSearch))
  .add(HttpApiEndpoint.post("filter", "/filter").setPayload(ReadSavedSearchesBody).addSuccess(Schema.Array(SavedSearch)))
  .add(HttpApiEndpoint.get("read", "/:id").setPath(IdPath).addSuccess(SavedSearch))
  .add(HttpApiEndpoint.del("delete", "/:id").setPath(IdPath).addSuccess(Schema.Void))
  .addError(SavedSearchNotFoundResponse)
  .prefix("/saved_searches")
{}
