import { test } from 'tap'

test('toolchain runs TypeScript tests', async (t) => {
  const value: number = 1 + 1
  t.equal(value, 2)
})
