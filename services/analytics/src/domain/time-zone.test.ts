import { addYears, instantOf, parseInstant, wallOf } from './time-zone.ts';

/** The wall clock at an instant by Intl's formatted string, a route independent of formatToParts' numbers. */
const texts = new Map<string, Intl.DateTimeFormat>();
const wallText = (ms: number, tz: string) => {
  if (!texts.has(tz)) texts.set(tz, new Intl.DateTimeFormat('sv-SE', { timeZone: tz, dateStyle: 'short', timeStyle: 'medium' }));
  return texts.get(tz)!.format(new Date(ms)).replace(' ', 'T');
};
const iso = (ms: number) => new Date(ms).toISOString();

describe('time-zone arithmetic', () => {
  it('reads the wall clock across both daylight-saving changes in Berlin and New York', () => {
    for (const tz of ['Europe/Berlin', 'America/New_York', 'Asia/Kolkata', 'Australia/Lord_Howe']) {
      for (let t = Date.UTC(2024, 2, 1); t < Date.UTC(2024, 11, 1); t += 97 * 60_000) {
        expect(iso(wallOf(t, tz)).slice(0, 19)).toBe(wallText(t, tz));
        // A wall time that happens once maps back to its instant.
        const wall = wallOf(t, tz);
        const back = instantOf(wall, tz);
        expect(wallOf(back, tz)).toBe(wall);
      }
    }
  });

  it('takes the first of a repeated hour, and moves a skipped one forward by the change', () => {
    // Berlin, 27 Oct 2024: 02:30 happens at 00:30Z (CEST) and at 01:30Z (CET).
    expect(iso(instantOf(Date.UTC(2024, 9, 27, 2, 30), 'Europe/Berlin'))).toBe('2024-10-27T00:30:00.000Z');
    // Berlin, 31 Mar 2024: 02:30 does not exist; read with the offset before (+01:00) it is 01:30Z, 03:30 CEST.
    expect(iso(instantOf(Date.UTC(2024, 2, 31, 2, 30), 'Europe/Berlin'))).toBe('2024-03-31T01:30:00.000Z');
    expect(iso(instantOf(Date.UTC(2024, 2, 10, 0, 0), 'America/New_York'))).toBe('2024-03-10T05:00:00.000Z');
    expect(iso(instantOf(Date.UTC(2024, 2, 11, 0, 0), 'America/New_York'))).toBe('2024-03-11T04:00:00.000Z');
  });

  it('parses times with an offset as instants and times without one as local', () => {
    expect(iso(parseInstant('2024-03-31', 'Europe/Berlin')!)).toBe('2024-03-30T23:00:00.000Z');
    expect(iso(parseInstant('2024-04-01T00:00:00', 'Europe/Berlin')!)).toBe('2024-03-31T22:00:00.000Z');
    expect(iso(parseInstant('2024-04-01T00:00:00Z', 'Europe/Berlin')!)).toBe('2024-04-01T00:00:00.000Z');
    expect(iso(parseInstant('2024-04-01T00:00:00+05:30', 'UTC')!)).toBe('2024-03-31T18:30:00.000Z');
    expect(iso(parseInstant('2024-04-01 00:00:00.25-0400', 'UTC')!)).toBe('2024-04-01T04:00:00.250Z');
    for (const bad of ['2024-02-30', '2024-13-01', '2024-01-01T24:00', 'yesterday', '2024-01-01T00:00:00+5']) expect(parseInstant(bad, 'UTC')).toBeNull();
  });

  it('moves whole years on the calendar, 29 February to the 28th', () => {
    expect(iso(addYears(Date.UTC(2024, 1, 29, 5), -1))).toBe('2023-02-28T05:00:00.000Z');
    expect(iso(addYears(Date.UTC(2024, 2, 1), -1))).toBe('2023-03-01T00:00:00.000Z');
  });
});
