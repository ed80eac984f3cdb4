/**
 * Structured, non-sensitive hints a server may attach to a FAILED status:
 * whether a retry makes sense and whom to contact. They travel as metadata
 * on the status message under {@link key} and as a short text suffix.
 *
 * @since 0.1.0
 */
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import * as ErrorId from "./internal/wire/errorId.js"

/**
 * The metadata key of the hint on a FAILED status message.
 *
 * @example
 * ```ts
 * import type { Task } from "@a2a-js/sdk"
 * import { FailureHint } from "effect-a2a"
 *
 * declare const task: Task // a FAILED task, as the SDK returns it
 * // { errorId, retryable, contact? }, when the server sent one
 * const raw = task.status?.message?.metadata?.[FailureHint.key]
 * ```
 * @category constants
 * @since 0.1.0
 */
export const key = "effect-a2a/failure"

/**
 * @example
 * ```ts
 * import { FailureHint } from "effect-a2a"
 *
 * const hint = FailureHint.FailureHint.make({ errorId: "3f9c0a7b12de", retryable: false, contact: "payments-oncall" })
 * FailureHint.suffix(hint) // "[retryable=false; contact=payments-oncall]"
 * ```
 * @category models
 * @since 0.1.0
 */
export class FailureHint extends Schema.Class<FailureHint>("effect-a2a/FailureHint")({
  errorId: Schema.String.pipe(Schema.pattern(ErrorId.pattern)),
  retryable: Schema.Boolean,
  contact: Schema.optionalWith(Schema.String.pipe(Schema.pattern(/^[\w.@/-]{1,128}$/)), { exact: true })
}) {}

/**
 * The text suffix written after the failure text.
 *
 * @example
 * ```ts
 * import { FailureHint } from "effect-a2a"
 *
 * const hint = FailureHint.FailureHint.make({ errorId: "3f9c0a7b12de", retryable: true })
 * const text = `Payment service busy. ${FailureHint.suffix(hint)}` // "Payment service busy. [retryable=true]"
 * ```
 * @category utils
 * @since 0.1.0
 */
export const suffix = (hint: FailureHint): string =>
  `[retryable=${hint.retryable}${hint.contact === undefined ? "" : `; contact=${hint.contact}`}]`

const decode = Schema.decodeUnknownOption(FailureHint)

/**
 * Reads the hint from a message's metadata; anything that does not decode is
 * ignored.
 *
 * @example
 * ```ts
 * import type { Task } from "@a2a-js/sdk"
 * import { Option } from "effect"
 * import { FailureHint } from "effect-a2a"
 *
 * declare const task: Task // a FAILED task, as the SDK returns it
 * const retryable = FailureHint.fromMetadata(task.status?.message?.metadata).pipe(
 *   Option.exists((hint) => hint.retryable)
 * )
 * ```
 * @category utils
 * @since 0.1.0
 */
export const fromMetadata = (metadata: Readonly<Record<string, unknown>> | undefined): Option.Option<FailureHint> =>
  metadata === undefined ? Option.none() : decode(metadata[key])
