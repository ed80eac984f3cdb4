/**
 * Error helpers shared by the rooms.
 *
 * @internal
 */

const stackTraceLimitWritable = (() => {
  const descriptor = Object.getOwnPropertyDescriptor(Error, "stackTraceLimit")
  return descriptor === undefined
    ? Object.isExtensible(Error)
    : descriptor.writable === true || descriptor.set !== undefined
})()

/**
 * Builds an error without capturing a stack trace, for errors raised on a hot
 * path from one known place (a breaker's rejection, a failed run's span
 * status), where the trace would cost more than the rest of the work.
 */
export const withoutStackTrace = <A>(make: () => A): A => {
  if (!stackTraceLimitWritable) return make()
  const limit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  try {
    return make()
  } finally {
    Error.stackTraceLimit = limit
  }
}
