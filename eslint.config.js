import neostandard, { resolveIgnoresFromGitignore } from 'neostandard'

export default [
  // What git ignores is built or generated here (the web client's dist, the local stack's data,
  // coverage), never written by hand, so it is not linted either.
  ...neostandard({ ts: true, ignores: resolveIgnoresFromGitignore() }),
  {
    // TypeBox idiom: a schema and its Static type share one name (`const Event = Type.Object(...)`
    // and `type Event = Static<typeof Event>`).
    rules: { '@typescript-eslint/no-redeclare': 'off' }
  }
]
