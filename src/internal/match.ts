/**
 * Exhaustive matching on one literal field of a value, such as an error's
 * `reason`.
 *
 * @internal
 */

/**
 * One handler for each of `Keys` and no other key: a handler left out, or a
 * misspelt one (which would never run), does not compile, as with
 * `Match.typeTags`.
 */
export type Cases<Keys extends string, A, C> =
  & { readonly [K in Keys]: (value: A) => unknown }
  & { readonly [K in Exclude<keyof C, Keys>]: never }

/** Takes one handler for each of `Keys`, and gives what the handler of a value's key returns. */
export type Matcher<Keys extends string, A> = <C extends Cases<Keys, A, C>>(
  cases: C
) => (value: A) => ReturnType<C[Keys]>

/** A matcher on the field `keyOf` reads. */
export const onField = <Keys extends string, A>(keyOf: (value: A) => Keys): Matcher<Keys, A> => (cases) => (value) =>
  (cases as { readonly [K in Keys]: (value: A) => unknown })[keyOf(value)](value) as ReturnType<typeof cases[Keys]>
