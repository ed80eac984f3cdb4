/**
 * Whether spans go anywhere.
 *
 * @internal
 */
import * as Effect from "effect/Effect"
import type * as Tracer from "effect/Tracer"

let defaultTracer: Tracer.Tracer | undefined

/**
 * Whether `tracer` is one the application provided (e.g. `@effect/opentelemetry`)
 * rather than Effect's default, whose spans are never exported.
 *
 * @internal
 */
export const exportsSpans = (tracer: Tracer.Tracer): boolean =>
  tracer !== (defaultTracer ??= Effect.runSync(Effect.tracer))
