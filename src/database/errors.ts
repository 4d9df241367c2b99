/** What a failed statement means, for the callers that answer it. */

/** The statement broke a unique constraint (PostgreSQL's unique_violation). */
export const isUniqueViolation = (error: unknown) => (error as { cause?: { code?: string } })?.cause?.code === "23505"
