import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', '.data/**', 'coverage/**', '.tap/**'] }),
  {
    // TypeBox idiom: a schema and its Static type share one name (`const Event = Type.Object(...)`
    // and `type Event = Static<typeof Event>`).
    rules: { '@typescript-eslint/no-redeclare': 'off' }
  }
]
