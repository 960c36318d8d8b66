import { sqlQueryProblem } from './sql-query.ts';

describe('a source query is one read-only statement', () => {
  it.each([
    ['SELECT 1', 'postgres'],
    ['  select * from t;  ', 'postgres'],
    ['(SELECT 1) UNION (SELECT 2)', 'postgres'],
    ['WITH x AS (SELECT 1) SELECT * FROM x', 'postgres'],
    ['VALUES (1), (2)', 'postgres'],
    ['TABLE orders', 'postgres'],
    ["-- a comment; DELETE\nSELECT ';' AS semi, 'it''s' AS q, \"a;b\" FROM t /* ; DROP */", 'postgres'],
    ["SELECT $$;DELETE$$, $tag$ ; $tag$, E'\\';' AS e", 'postgres'],
    ['/* nested /* ; */ still comment ; */ SELECT 1', 'postgres'],
    ["SELECT 'a\\';' AS s, `we;ird` FROM t # trailing; comment", 'mysql'],
    ['SELECT 1 -- x;\n', 'mysql'],
  ] as const)('accepts %j (%s)', (sql, dialect) => {
    expect(sqlQueryProblem(sql, dialect)).toBeNull();
  });

  it.each([
    ['DELETE FROM t', 'postgres', 'only one read-only SELECT is allowed (SELECT, WITH … SELECT, VALUES or TABLE), not DELETE'],
    ['  update t set a = 1', 'mysql', 'only one read-only SELECT is allowed (SELECT, WITH … SELECT, VALUES or TABLE), not UPDATE'],
    ['/* x */ DROP TABLE t', 'postgres', 'only one read-only SELECT is allowed (SELECT, WITH … SELECT, VALUES or TABLE), not DROP'],
    ['SELECT 1; DROP TABLE t', 'postgres', 'only one statement is allowed, a read-only SELECT; this query has 2'],
    ["SELECT ';'; SELECT 2;", 'mysql', 'only one statement is allowed, a read-only SELECT; this query has 2'],
    ["SELECT 'a\\'; DELETE FROM t; --'", 'postgres', 'only one statement is allowed, a read-only SELECT; this query has 2'],
    ['-- only a comment', 'postgres', 'the query is empty; give one read-only SELECT'],
    ['SELEC 1', 'postgres', 'only one read-only SELECT is allowed (SELECT, WITH … SELECT, VALUES or TABLE), not SELEC'],
  ] as const)('refuses %j (%s)', (sql, dialect, problem) => {
    expect(sqlQueryProblem(sql, dialect)).toBe(problem);
  });
});
