import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Blocks: types, their schemas (with the schemas they nest), documents (data encrypted at rest, so
 * `data` holds ciphertext) and the documents they reference; and the CSRF tokens issued to clients.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE block_type (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      slug text NOT NULL,
      logo_url text,
      documentation_url text,
      description text,
      code_example text,
      is_protected boolean NOT NULL DEFAULT false,
      CONSTRAINT uq_block_type__slug UNIQUE (slug)
    )
  `
  yield* sql`
    CREATE TABLE block_schema (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      checksum text NOT NULL,
      fields jsonb NOT NULL DEFAULT '{}'::jsonb,
      capabilities jsonb NOT NULL DEFAULT '[]'::jsonb,
      version text NOT NULL DEFAULT 'non-versioned',
      block_type_id uuid NOT NULL REFERENCES block_type (id) ON DELETE CASCADE,
      CONSTRAINT uq_block_schema__checksum_version UNIQUE (checksum, version)
    )
  `
  yield* sql`CREATE INDEX ix_block_schema__block_type_id ON block_schema (block_type_id)`
  yield* sql`CREATE INDEX ix_block_schema__created ON block_schema (created)`
  yield* sql`CREATE INDEX ix_block_schema__capabilities ON block_schema USING gin (capabilities)`
  yield* sql`
    CREATE TABLE block_schema_reference (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      parent_block_schema_id uuid NOT NULL REFERENCES block_schema (id) ON DELETE CASCADE,
      reference_block_schema_id uuid NOT NULL REFERENCES block_schema (id) ON DELETE CASCADE
    )
  `
  yield* sql`CREATE INDEX ix_block_schema_reference__parent ON block_schema_reference (parent_block_schema_id)`
  yield* sql`CREATE INDEX ix_block_schema_reference__reference ON block_schema_reference (reference_block_schema_id)`
  yield* sql`
    CREATE TABLE block_document (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      data text NOT NULL,
      is_anonymous boolean NOT NULL DEFAULT false,
      block_type_name text,
      block_type_id uuid NOT NULL REFERENCES block_type (id) ON DELETE CASCADE,
      block_schema_id uuid NOT NULL REFERENCES block_schema (id) ON DELETE CASCADE,
      CONSTRAINT uq_block__type_id_name UNIQUE (block_type_id, name)
    )
  `
  yield* sql`CREATE INDEX ix_block_document__name ON block_document (name)`
  yield* sql`CREATE INDEX ix_block_document__is_anonymous ON block_document (is_anonymous)`
  yield* sql`CREATE INDEX ix_block_document__block_schema_id ON block_document (block_schema_id)`
  yield* sql`CREATE INDEX ix_block_document__block_type_name__name ON block_document (block_type_name, name)`
  yield* sql`
    CREATE TABLE block_document_reference (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      name text NOT NULL,
      parent_block_document_id uuid NOT NULL REFERENCES block_document (id) ON DELETE CASCADE,
      reference_block_document_id uuid NOT NULL REFERENCES block_document (id) ON DELETE CASCADE,
      CONSTRAINT ck_block_document_reference__no_self_reference
        CHECK (parent_block_document_id <> reference_block_document_id)
    )
  `
  yield* sql`CREATE INDEX ix_block_document_reference__parent ON block_document_reference (parent_block_document_id)`
  yield* sql`CREATE INDEX ix_block_document_reference__reference ON block_document_reference (reference_block_document_id)`
  yield* sql`
    CREATE TABLE csrf_token (
      id uuid PRIMARY KEY,
      created timestamptz NOT NULL,
      updated timestamptz NOT NULL,
      token text NOT NULL,
      client text NOT NULL,
      expiration timestamptz NOT NULL,
      CONSTRAINT uq_csrf_token__client UNIQUE (client)
    )
  `
  yield* sql`CREATE INDEX ix_csrf_token__expiration ON csrf_token (expiration)`
})
