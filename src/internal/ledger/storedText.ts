/**
 * What PostgreSQL cannot store as given: text with NUL, which it refuses,
 * or with a lone surrogate, which it stores as U+FFFD, so that two
 * different texts would read back as one.
 *
 * @internal
 */
export const storedTextProblem = (text: string): string | undefined =>
  text.includes("\u0000")
    ? "must not contain NUL (U+0000)"
    : /\p{Surrogate}/u.test(text)
    ? "must be well-formed Unicode (no lone surrogate)"
    : undefined
