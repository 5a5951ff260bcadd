// The multistatus parse of dav-answers.ts against tsdav's own davRequest: a large answer is parsed
// in parts on the worker, its first responses handed on before the last are parsed, and what comes
// back is what tsdav answers for the whole document, whatever the answer holds.
import { test } from 'tap'
import { davRequest, type DAVResponse } from 'tsdav'
import { davResponsesOf, text, type DavResponse } from '../../../sync/providers/caldav/dav-answers.js'
import { eventsOfResource } from '../../../sync/lib/providers/caldav-mapping.js'

const XML = { 'content-type': 'application/xml; charset=utf-8' }

/** What tsdav answers for the whole body, with `raw` as dav-answers.ts keeps it (the multistatus without its responses, or the text's start). */
async function tsdavWhole (body: string, status = 207, headers: Record<string, string> = XML): Promise<DAVResponse[]> {
  const responses = await davRequest({ url: 'about:blank', init: { method: 'PROPFIND', body: undefined }, convertIncoming: false, fetch: async () => new Response(body, { status, headers }) })
  return responses.map((response) => {
    const raw = response.raw as Record<string, unknown> | undefined
    if (typeof raw === 'object' && raw !== null && 'multistatus' in raw) {
      const { response: _responses, ...rest } = raw['multistatus'] as Record<string, unknown>
      return { ...response, raw: { ...raw, multistatus: rest } }
    }
    return { ...response, raw: body.length > 4096 ? `${body.slice(0, 4096)}…` : body }
  })
}

async function parsed (body: string, status = 207, headers: Record<string, string> = XML): Promise<{ responses: DAVResponse[], pieces: DAVResponse[][] }> {
  const pieces: DAVResponse[][] = []
  const responses = await davResponsesOf(new Response(body, { status, headers }), { onResponses: (piece) => { pieces.push(piece.map((response) => ({ ...response }))) } })
  return { responses, pieces }
}

const escaped = (text: string) => text.replaceAll('&', '&amp;').replaceAll('<', '&lt;').replaceAll('>', '&gt;')

function ics (index: number, summary = `Single ${index}`): string {
  return ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//test//EN', 'BEGIN:VEVENT', `UID:event-${index}`, 'DTSTAMP:20261201T000000Z', 'DTSTART:20261201T100000Z', 'DTEND:20261201T110000Z', `SUMMARY:${summary}`, 'END:VEVENT', 'END:VCALENDAR', ''].join('\r\n')
}

/** As Radicale answers a calendar-query: the DAV namespace as default, calendar-data escaped. */
function radicaleLike (count: number): string {
  const responses = Array.from({ length: count }, (_, index) =>
    `<response><href>/alice/work/event-${index}.ics</href><propstat><prop><getetag>"etag-${index}"</getetag><C:calendar-data>${escaped(ics(index))}</C:calendar-data></prop><status>HTTP/1.1 200 OK</status></propstat></response>`)
  return `<?xml version='1.0' encoding='utf-8'?>\n<multistatus xmlns="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">${responses.join('')}</multistatus>`
}

test('a large multistatus: parsed in parts on the worker, handed on piece by piece, the same responses as tsdav parses from the whole', async (t) => {
  const body = radicaleLike(2500)
  t.ok(body.length > 900 * 1000, `about a megabyte (${body.length} characters)`)
  const { responses, pieces } = await parsed(body)
  const expected = await tsdavWhole(body)
  t.equal(responses.length, 2500)
  t.same(responses, expected, 'every response, its props and raw, as tsdav answers for the whole document')
  t.ok(pieces.length >= 10, `handed on in pieces as they were parsed (${pieces.length})`)
  t.same(pieces.flat().map((response) => response.href), expected.map((response) => response.href), 'the pieces in order, each response once')
})

test('prefixes, comments, CDATA naming the closing tag, other children between responses, characters past the BMP: the same as the whole', async (t) => {
  const responses = Array.from({ length: 400 }, (_, index) => {
    const data = index % 3 === 0
      // `]]>` in the data: the section ends before it and a second one begins (two sections).
      ? `<![CDATA[${ics(index, 'Looks like </D:response></D:multistatus> ]]]]><![CDATA[> 🎉 inside')}]]>`
      : escaped(ics(index, `Ünïcödé 🎉 & <tags> ${index}`))
    const comment = index % 50 === 0 ? '<!-- a comment between responses -->' : ''
    const middle = index === 200 ? '<D:responsedescription>halfway</D:responsedescription>' : ''
    return `${comment}${middle}<D:response>\n  <D:href>/alice/work/e%20${index}.ics</D:href><D:propstat><D:prop><D:getetag>"${index}"</D:getetag><C:calendar-data>${data}</C:calendar-data></D:prop><D:status>HTTP/1.1 200 OK</D:status></D:propstat>${index % 7 === 0 ? '<D:propstat><D:prop><D:displayname/></D:prop><D:status>HTTP/1.1 404 Not Found</D:status></D:propstat>' : ''}</D:response>`
  })
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<!-- before the root -->\n<D:multistatus xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav">${responses.join('\n')}<D:sync-token>http://example.com/ns/sync/42</D:sync-token></D:multistatus>\n`
  t.ok(body.length > 128 * 1024, `${body.length} characters`)
  const { responses: found, pieces } = await parsed(body)
  t.same(found, await tsdavWhole(body), 'responses, props, statuses and raw (with the sync-token and the description) as from the whole')
  t.ok(pieces.length > 1, 'in more than one piece')
  t.match(found[0]?.raw, { multistatus: { syncToken: 'http://example.com/ns/sync/42', responsedescription: 'halfway' } }, 'raw keeps what is not a response')
  t.match(text((found[0]?.props as { calendarData: unknown }).calendarData), /^BEGIN:VCALENDAR\r\n.*SUMMARY:Looks like <\/D:response><\/D:multistatus> \]\]> 🎉 inside\r\n.*END:VCALENDAR$/s, 'calendar-data in CDATA sections (two, around a `]]>` of its own) reads as its text')
  t.match(text((found[1]?.props as { calendarData: unknown }).calendarData), /SUMMARY:Ünïcödé 🎉 & <tags> 1\r\n/, 'escaped calendar-data reads as its text')
})

test('odd answers, parsed whole or in parts: what tsdav answers for them', async (t) => {
  const large = radicaleLike(400)
  const cases: Array<{ name: string, body: string, status?: number, headers?: Record<string, string> }> = [
    { name: 'another XML document', body: `<?xml version="1.0"?><error xmlns="DAV:">${'<x>padding</x>'.repeat(10_000)}</error>` },
    { name: 'responses named `response-`, which tsdav takes for responses', body: large.replaceAll('<response>', '<response->').replaceAll('</response>', '</response->') },
    { name: 'an HTML page with 207', body: `<html><body>${'<p>not DAV</p>'.repeat(10_000)}</body></html>`, headers: { 'content-type': 'text/html' } },
    { name: 'a failure with an XML body', body: large, status: 500 },
    { name: 'a multistatus with no response', body: `<multistatus xmlns="DAV:"><!-- ${'x'.repeat(100_000)} --><sync-token>t-1</sync-token></multistatus>` },
    // Were it cut into parts, each part would repeat the 1 MB before the first response.
    { name: 'a megabyte of comment before the root', body: `<!-- ${'x'.repeat(1024 * 1024)} -->${large}` },
    { name: 'a root start tag padded with a megabyte of attribute', body: large.replace('<multistatus ', `<multistatus pad="${'x'.repeat(1024 * 1024)}" `) }
  ]
  for (const one of cases) {
    const { responses, pieces } = await parsed(one.body, one.status, one.headers)
    t.same(responses, await tsdavWhole(one.body, one.status, one.headers), one.name)
    if (one.name.includes('megabyte')) t.equal(pieces.length, 1, `${one.name}: parsed whole, in one piece`)
  }
})

test('a small answer is parsed here at once and handed on in one piece', async (t) => {
  const body = radicaleLike(5)
  const { responses, pieces } = await parsed(body)
  t.same(responses, await tsdavWhole(body))
  t.equal(pieces.length, 1)
})

test('an answer cut off before its root element ends is refused, large or small: what came is not all there is', async (t) => {
  for (const body of [radicaleLike(400), radicaleLike(3)]) {
    const cut = body.slice(0, Math.floor(body.length / 2))
    const salvaged = await tsdavWhole(cut)
    t.ok(salvaged.some((response) => response.href !== undefined), `tsdav alone reads ${salvaged.length} responses of it, as if they were the whole answer`)
    await t.rejects(parsed(cut), { name: 'DavAnswerCutOffError' }, `${cut.length} characters of ${body.length}`)
  }
  await t.rejects(parsed('<?xml version="1.0"?>'), { name: 'DavAnswerCutOffError' }, 'no root element at all')
})

test('with `events`, the first resources come mapped to their events, as the adapter maps them, and the rest without', async (t) => {
  const body = radicaleLike(900)
  const events = { calendarUrl: 'https://dav.example.com/alice/work/', timeZone: 'Europe/Berlin', first: 600 }
  const responses = await davResponsesOf(new Response(body, { status: 207, headers: XML }), { events })
  t.equal(responses.length, 900)
  const mapped = responses.filter((response) => response.events !== undefined)
  t.equal(mapped.length, 600, 'the first 600')
  t.same(responses.slice(0, 600).map((response) => response.href), mapped.map((response) => response.href), 'in order from the first')
  for (const index of [0, 299, 599]) {
    const response = responses[index] as DavResponse
    const props = response.props as { calendarData: unknown, getetag: unknown }
    t.same(response.events, eventsOfResource(`/alice/work/event-${index}.ics`, text(props.calendarData) ?? '', text(props.getetag), 'Europe/Berlin'), `resource ${index}: what eventsOfResource gives`)
  }
  t.match(responses[0]?.events, [{ providerEventId: '/alice/work/event-0.ics', etag: '"etag-0"', content: { title: 'Single 0' } }])
  const small = await davResponsesOf(new Response(radicaleLike(3), { status: 207, headers: XML }), { events: { ...events, first: 2 } })
  t.same(small.map((response) => response.events?.length ?? null), [1, 1, null], 'a small answer, parsed here, the same way')
})
