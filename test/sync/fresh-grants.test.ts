import { test } from 'tap'
import { FreshGrants } from '../../sync/providers/fresh-grants.js'

test('a code exchange\'s access token is taken once, by its refresh token, and never when it is about to end', async (t) => {
  let now = 1_000_000
  const grants = new FreshGrants(() => now)
  grants.keep('refresh-a', 'access-a', now + 3_600_000)
  grants.keep('refresh-b', 'access-b', now + 30_000)
  t.equal(grants.take('refresh-other'), undefined, 'another refresh token takes nothing')
  t.same(grants.take('refresh-a'), { accessToken: 'access-a', expiresAt: now + 3_600_000 })
  t.equal(grants.take('refresh-a'), undefined, 'taken once')
  t.equal(grants.take('refresh-b'), undefined, 'thirty seconds left: not worth taking')

  grants.keep('refresh-c', 'access-c', now + 3_600_000)
  now += 3_600_000
  t.equal(grants.take('refresh-c'), undefined, 'expired unused')
})

test('at most a hundred wait; the oldest goes first', async (t) => {
  const grants = new FreshGrants(() => 0)
  for (let index = 0; index <= 100; index++) grants.keep(`refresh-${index}`, `access-${index}`, 3_600_000)
  t.equal(grants.take('refresh-0'), undefined, 'the oldest went')
  t.equal(grants.take('refresh-1')?.accessToken, 'access-1')
  t.equal(grants.take('refresh-100')?.accessToken, 'access-100')
})
