import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  leadTemplateVars,
  renderTemplate,
  requiredVariables,
  templateErrors,
} from '../src/modules/outreach/campaigns/templates.ts';

const lead = {
  id: 'l1',
  email: 'ada@example.com',
  firstName: 'Ada',
  lastName: 'Lovelace',
  company: 'Analytical Engines',
  jobTitle: null,
  phone: null,
  status: 'VALID' as const,
  customFields: { city: 'London', score: 7, nested: { no: true } },
  emailValidation: null,
};

describe('outreach templates', () => {
  test('variables, fallbacks, custom fields and escapes render', () => {
    const vars = leadTemplateVars(lead);
    assert.equal(
      renderTemplate('Hi {{firstName}} of {{company}} in {{custom.city}} ({{custom.score}}), \\{x\\}', vars),
      'Hi Ada of Analytical Engines in London (7), {x}',
    );
    assert.equal(renderTemplate('Hi {{jobTitle|there}}, {{ fullName }}', vars), 'Hi there, Ada Lovelace');
    assert.equal(renderTemplate('[{{custom.missing|}}]', vars), '[]');
    assert.equal(vars['custom.nested'], undefined);
  });

  test('spintax picks one option, nested and with variables', () => {
    const t = '{Hi|Hello {{firstName}}|{Hey|Yo}}!';
    assert.equal(
      renderTemplate(t, leadTemplateVars(lead), () => 0),
      'Hi!',
    );
    assert.equal(
      renderTemplate(t, leadTemplateVars(lead), () => 0.5),
      'Hello Ada!',
    );
    assert.equal(
      renderTemplate(t, leadTemplateVars(lead), () => 0.99),
      'Yo!',
    );
    const seen = new Set(Array.from({ length: 200 }, () => renderTemplate('{a|b|c}', {})));
    assert.deepEqual([...seen].sort(), ['a', 'b', 'c']);
  });

  test('errors name the problem and its position', () => {
    assert.deepEqual(templateErrors('Hello {{firstName}} {x|y}'), []);
    const [unknown] = templateErrors('Hi {{fristName}}');
    assert.equal(unknown?.position, 3);
    assert.match(unknown!.message, /unknown variable "fristName".*line 1, column 4/);
    const [open] = templateErrors('ok\nHi {{firstName');
    assert.equal(open?.position, 6);
    assert.match(open!.message, /unclosed "\{\{" at line 2, column 4/);
    assert.match(templateErrors('a } b')[0]!.message, /unbalanced "}" at line 1, column 3/);
    assert.match(templateErrors('{a|b')[0]!.message, /unclosed "\{"/);
    assert.match(templateErrors('{{}}')[0]!.message, /empty variable/);
    assert.match(templateErrors('{{custom.}}')[0]!.message, /unknown variable/);
    assert.throws(() => renderTemplate('{{nope}}', {}), /invalid template/);
  });

  test('required variables are those without a fallback, spintax options included', () => {
    assert.deepEqual(
      requiredVariables('{{firstName}} {{company|your team}} {a|{{custom.city}}} {{firstName}}').sort(),
      ['custom.city', 'firstName'],
    );
  });
});
