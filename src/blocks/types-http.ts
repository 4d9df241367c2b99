import { apiGroup } from "../http/group.ts"
import { Effect, Layer } from "effect"
import { resolveLimit } from "../domain/pagination.ts"
import { BatonApi } from "../api.ts"
import { orFail } from "../domain/errors.ts"
import { BlockDocuments } from "./documents-service.ts"
import { BlockDocumentNotFound, BlockTypeNameReserved, BlockTypeNotFound, BlockTypeProtected } from "./errors.ts"
import { BlockRegistration } from "./registration.ts"
import type { BlockType, BlockTypeUpdate } from "./schemas.ts"
import { StorageDefaults } from "./storage-defaults.ts"
import { BlockTypesRepo } from "./types-repo.ts"

/** `&`, `<` and `>` as entities (quotes kept), as descriptions and examples are stored on create. */
const escapeHtml = (text: string | null) =>
  text === null ? null : text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;")

const unescapeHtml = (text: string | null) =>
  text === null ? null : text.replaceAll("&lt;", "<").replaceAll("&gt;", ">").replaceAll("&amp;", "&")

const UPDATABLE = ["logo_url", "documentation_url", "description", "code_example"] as const

/** An update that sets every updatable field to what is stored changes nothing (and keeps `updated`). */
const changesNothing = (body: BlockTypeUpdate, stored: BlockType) =>
  UPDATABLE.every((key) => {
    const value = body[key]
    if (value === undefined) return false
    const plain = key === "description" || key === "code_example"
    return (plain ? unescapeHtml(value) : value) === (plain ? unescapeHtml(stored[key]) : stored[key])
  })

export const BlockTypesLive = apiGroup(BatonApi, "blockTypes", (handlers) =>
  Effect.gen(function* () {
    const types = yield* BlockTypesRepo
    const documents = yield* BlockDocuments
    const registration = yield* BlockRegistration
    const storage = yield* StorageDefaults

    return handlers
      .handle("create", ({ payload }) =>
        Effect.gen(function* () {
          if (payload.name.toLowerCase().startsWith("prefect")) return yield* new BlockTypeNameReserved()
          return yield* types.create({
            name: payload.name,
            slug: payload.slug,
            logo_url: payload.logo_url?.trim() ?? null,
            documentation_url: payload.documentation_url?.trim() ?? null,
            description: escapeHtml(payload.description),
            code_example: escapeHtml(payload.code_example)
          })
        })
      )
      .handle("read", ({ path }) => types.find(path.id).pipe(orFail(() => new BlockTypeNotFound())))
      .handle("readBySlug", ({ path }) => types.findBySlug(path.slug).pipe(orFail(() => new BlockTypeNotFound())))
      .handle("filter", ({ payload }) =>
        Effect.flatMap(resolveLimit(payload.limit), (limit) =>
          types.filter({ block_types: payload.block_types, block_schemas: payload.block_schemas, offset: payload.offset, limit })
        )
      )
      .handle("update", ({ path, payload }) =>
        Effect.gen(function* () {
          const stored = yield* types.find(path.id).pipe(orFail(() => new BlockTypeNotFound()))
          if (changesNothing(payload, stored)) return
          const changes: Record<string, unknown> = {}
          for (const key of UPDATABLE) if (payload[key] !== undefined) changes[key] = payload[key]
          if (Object.keys(changes).length > 0) yield* types.update(path.id, changes)
        })
      )
      .handle("delete", ({ path }) =>
        Effect.gen(function* () {
          const stored = yield* types.find(path.id).pipe(orFail(() => new BlockTypeNotFound()))
          if (stored.is_protected) return yield* new BlockTypeProtected()
          yield* storage.clearWhenDeleting({ block_type_id: path.id }, types.remove(path.id))
        })
      )
      .handle("installSystem", () => Effect.as(registration.registerAll(), null))
      .handle("readDocuments", ({ path, urlParams }) =>
        Effect.gen(function* () {
          const type = yield* types.findBySlug(path.slug).pipe(orFail(() => new BlockTypeNotFound()))
          return yield* documents.filter({
            block_documents: { operator: "and_", block_type_id: { any_: [type.id] }, is_anonymous: { eq_: false } },
            include_secrets: urlParams.include_secrets,
            sort: "NAME_ASC",
            offset: 0,
            // Every document of the type, as the reference lists them.
            limit: null
          })
        })
      )
      .handle("readDocumentByName", ({ path, urlParams }) =>
        documents.findByName(path.slug, path.block_document_name, urlParams.include_secrets).pipe(
          orFail(() => new BlockDocumentNotFound())
        )
      )
  })
).pipe(Layer.provide([BlockDocuments.Default, BlockRegistration.Default, BlockTypesRepo.Default, StorageDefaults.Default]))
