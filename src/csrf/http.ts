import { apiGroup } from "../http/group.ts"
import { Duration, Effect, Layer } from "effect"
import { randomBytes } from "node:crypto"
import { now } from "../domain/time.ts"
import { BatonApi } from "../api.ts"
import { CsrfProtectionDisabled } from "./errors.ts"
import { Settings } from "../settings/settings.ts"
import { CsrfTokensRepo } from "./repo.ts"

export const CsrfLive = apiGroup(BatonApi, "csrf", (handlers) =>
  Effect.gen(function* () {
    const settings = yield* Settings
    const tokens = yield* CsrfTokensRepo
    return handlers.handle("token", ({ urlParams }) =>
      Effect.gen(function* () {
        if (!settings.server.api.csrf_protection_enabled) {
          return yield* new CsrfProtectionDisabled()
        }
        const at = yield* now
        const expiration = new Date(at.getTime() + Duration.toMillis(settings.server.api.csrf_token_expiration))
        const issued = yield* tokens.issue(urlParams.client, randomBytes(32).toString("hex"), expiration)
        // Expired tokens of every client go whenever a token is issued.
        yield* tokens.deleteExpired(at)
        return issued
      })
    )
  })
).pipe(Layer.provide(CsrfTokensRepo.Default))
