/**
 * Registering the system block types and schemas: at start when server.register_blocks_on_start
 * asks (skipped when nothing changed since the last registration into this database, unless
 * server.memoize_block_auto_registration is off), and on POST /block_types/install_system_block_types.
 */
import { Effect, Option } from "effect"
import { createHash } from "node:crypto"
import { ConfigurationRepo } from "../configuration/repo.ts"
import { Settings } from "../settings/settings.ts"
import { COMPATIBLE_SERVER_VERSION } from "../version.ts"
import { pythonJson } from "./checksum.ts"
import { BlockSchemas } from "./schemas-service.ts"
import { blockTypeOf, systemBlocks } from "./system-blocks.ts"
import { BlockTypesRepo } from "./types-repo.ts"
import { traced } from "../domain/traced.ts"

/** The version system block schemas are registered with. */
export const SYSTEM_BLOCK_SCHEMA_VERSION = COMPATIBLE_SERVER_VERSION

const MEMO_KEY = "block_auto_registration"

/** What a registration registers: when it is unchanged, registering again changes nothing. */
const registrationHash = createHash("sha256")
  .update(pythonJson({ version: SYSTEM_BLOCK_SCHEMA_VERSION, blocks: systemBlocks }))
  .digest("hex")

export class BlockRegistration extends Effect.Service<BlockRegistration>()("baton/BlockRegistration", {
  effect: Effect.gen(function* () {
    const types = yield* BlockTypesRepo
    const schemas = yield* BlockSchemas
    const configuration = yield* ConfigurationRepo
    const settings = yield* Settings

    /**
     * Creates or updates every system block type (by slug) and adds its schema when missing: a few
     * statements for all of them, since every server start (and every test's) runs it.
     */
    const registerAll = traced("BlockRegistration.registerAll")(function* () {
      const stored = yield* types.upsertMany(systemBlocks.map((block) => ({ ...blockTypeOf(block), is_protected: block.is_protected })))
      const idOfSlug = new Map(stored.map((type) => [type.slug, type.id]))
      // Fails only when a block type is deleted while its schema is being stored (or the system
      // blocks themselves are wrong): the caller answers it.
      yield* schemas.createAll(systemBlocks.map((block) => ({
        fields: block.fields as Record<string, unknown>,
        block_type_id: idOfSlug.get(block.slug)!,
        capabilities: block.capabilities,
        version: SYSTEM_BLOCK_SCHEMA_VERSION
      })))
    })

    /** The start-time registration, as the settings ask for it; whether it ran. */
    const registerOnStart = traced("BlockRegistration.registerOnStart")(function* () {
      if (!settings.server.register_blocks_on_start) return false
      const memoize = settings.server.memoize_block_auto_registration
      if (memoize && Option.getOrUndefined(yield* configuration.find(MEMO_KEY)) === registrationHash) return false
      yield* registerAll()
      if (memoize) yield* configuration.write(MEMO_KEY, registrationHash)
      yield* Effect.logDebug(`Registered ${systemBlocks.length} system block types`)
      return true
    })

    return { registerAll, registerOnStart } as const
  }),
  dependencies: [BlockSchemas.Default, BlockTypesRepo.Default, ConfigurationRepo.Default]
}) {}
