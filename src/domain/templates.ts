/**
 * Templates users write (parameter values, later automation actions) in Jinja syntax. They are
 * rendered by @huggingface/jinja, an interpreter over its own values: a template can read the
 * context it is given and nothing of the server (no constructors, no prototypes, no host functions).
 */
import { Template } from "@huggingface/jinja"
import { Either } from "effect"

/** The rendered text, or why the template could not be parsed or rendered. */
export const renderTemplate = (source: string, context: Record<string, unknown> = {}): Either.Either<string, string> => {
  try {
    return Either.right(new Template(source).render(context))
  } catch (error) {
    return Either.left((error as Error).message)
  }
}
