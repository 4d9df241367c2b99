/**
 * Creating block schemas: idempotent by checksum and version; a schema that nests blocks stores each
 * nested block's schema (from the root's definitions) unless one with its checksum exists already.
 */
import { Effect, Option } from "effect"
import { isObject } from "../domain/schemas.ts"
import { orFail, ValidationError } from "../domain/errors.ts"
import { BlockSchemaConflict, BlockSchemaNotFound, BlockSchemaTypeNotFound, NestedBlockTypeNotFound } from "./errors.ts"
import { blockSchemaChecksum, collectRefs, definitionKey, nonBlockDefinitions } from "./checksum.ts"
import { type BlockSchemaCreate, DEFAULT_BLOCK_SCHEMA_VERSION } from "./schemas.ts"
import { BlockSchemasRepo } from "./schemas-repo.ts"
import { BlockTypesRepo } from "./types-repo.ts"
import { traced } from "../domain/traced.ts"

type Fields = Record<string, unknown>

const invalid = (detail: string) => new ValidationError({ detail })

const nonEmptyObject = (value: unknown): value is Record<string, unknown> => isObject(value) && Object.keys(value).length > 0

/**
 * A schema as it is stored: its checksum (over the fields with the definitions it inherits), its
 * fields without the nested blocks' definitions (schemas of their own) and without its references,
 * which it returns apart.
 */
const prepared = (input: Fields, inherited: Fields | undefined) => {
  const fields: Fields = structuredClone(input)
  const definitions = inherited ?? (nonEmptyObject(fields.definitions) ? fields.definitions : undefined)
  if (definitions !== undefined) fields.definitions = definitions
  const checksum = blockSchemaChecksum(fields)
  if (definitions !== undefined) {
    const kept = nonBlockDefinitions(fields, definitions)
    if (Object.keys(kept).length > 0) fields.definitions = kept
    else delete fields.definitions
  }
  const references = isObject(fields.block_schema_references) ? fields.block_schema_references : {}
  delete fields.block_schema_references
  return { checksum, fields, definitions, references }
}

export class BlockSchemas extends Effect.Service<BlockSchemas>()("baton/BlockSchemas", {
  effect: Effect.gen(function* () {
    const schemas = yield* BlockSchemasRepo
    const types = yield* BlockTypesRepo

    /** The definition the property `name` of `fields` uses for a block of type `slug`. */
    const definitionFor = (fields: Fields, name: string, slug: string, typeName: string, definitions: Fields) => {
      const property = isObject(fields.properties) ? fields.properties[name] : undefined
      if (property === undefined) {
        return Effect.fail(invalid(`Block schema reference '${name}' names no property of the block schema.`))
      }
      const refs = collectRefs(property)
      const candidates = refs.map((ref) => definitions[definitionKey(ref)])
      const found =
        refs.length === 1 ? candidates[0] : candidates.find((d) => isObject(d) && d.block_type_slug === slug)
      return isObject(found)
        ? Effect.succeed(found)
        : Effect.fail(invalid(`Unable to create nested block schema for block type '${typeName}' due to missing definition.`))
    }

    /** Stores the schema (and the nested ones it needs) unless stored; its id and whether it is new. */
    const store = (
      input: Fields,
      blockTypeId: string,
      version: string,
      capabilities: ReadonlyArray<string>,
      inherited: Fields | undefined
    ): Effect.Effect<
      { readonly id: string; readonly created: boolean },
      ValidationError | NestedBlockTypeNotFound | BlockSchemaConflict
    > =>
      Effect.gen(function* () {
        const { checksum, fields, definitions, references } = prepared(input, inherited)
        const existing = yield* schemas.findIdByChecksum(checksum, version)
        if (Option.isSome(existing)) return { id: existing.value, created: false }
        const { id, created } = yield* schemas.insert({ checksum, fields, capabilities, version, block_type_id: blockTypeId })
        // A concurrent create stored it first, with its nested schemas.
        if (!created) return { id, created }

        for (const [name, value] of Object.entries(references)) {
          for (const entry of Array.isArray(value) ? value : [value]) {
            if (!isObject(entry) || typeof entry.block_type_slug !== "string" || typeof entry.block_schema_checksum !== "string") {
              return yield* invalid(
                `Block schema reference '${name}' needs a block_type_slug and a block_schema_checksum.`
              )
            }
            const slug = entry.block_type_slug
            const childType = yield* types.findBySlug(slug).pipe(orFail(() =>
              new NestedBlockTypeNotFound({
                detail: `Cannot create block schema because block type '${slug}' was not found.Did you forget to register the block type?`
              })
            ))
            let childId = Option.getOrUndefined(yield* schemas.findIdByChecksum(entry.block_schema_checksum))
            if (childId === undefined) {
              if (definitions === undefined) {
                return yield* invalid(
                  "Unable to create nested block schema due to missing definitions in root block schema fields"
                )
              }
              const childFields = yield* definitionFor(input, name, slug, childType.name, definitions)
              childId = (yield* store(childFields, childType.id, DEFAULT_BLOCK_SCHEMA_VERSION, [], definitions)).id
            }
            yield* schemas.addReference(id, childId, name)
          }
        }
        return { id, created: true }
      })

    /**
     * Creates the schema of `body`, or finds the one with its checksum and version; a concurrent
     * create of the same schema finds the one that won (BlockSchemasRepo.insert).
     */
    const create = traced("BlockSchemas.create")(function* (body: BlockSchemaCreate) {
      yield* types.find(body.block_type_id).pipe(
        orFail(() => new BlockSchemaTypeNotFound({ detail: `Block type ${body.block_type_id} not found.` }))
      )
      const { id, created } = yield* schemas.transaction(
        store(body.fields, body.block_type_id, body.version, body.capabilities, undefined)
      )
      // Deleted between its transaction and this read.
      const schema = yield* schemas.find(id).pipe(orFail(() => new BlockSchemaNotFound()))
      return { schema, created }
    })

    /**
     * Creates many schemas, each as `create` does, for types known to exist (the system blocks at
     * start): the ones without nested blocks in one statement, the others one by one.
     */
    const createAll = traced("BlockSchemas.createAll")(function* (bodies: ReadonlyArray<BlockSchemaCreate>) {
      const plain = []
      for (const body of bodies) {
        const { checksum, fields, references } = prepared(body.fields, undefined)
        if (Object.keys(references).length > 0) {
          yield* create(body)
          continue
        }
        plain.push({ checksum, fields, capabilities: body.capabilities, version: body.version, block_type_id: body.block_type_id })
      }
      yield* schemas.insertMany(plain)
    })

    return { create, createAll } as const
  }),
  dependencies: [BlockSchemasRepo.Default, BlockTypesRepo.Default]
}) {}
