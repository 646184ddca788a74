import { timestamp, uuid } from 'drizzle-orm/pg-core';
import { newId } from '../ids.ts';

export const idColumn = () => uuid('id').primaryKey().$defaultFn(newId);
export const tsColumn = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });
export const createdAt = () => tsColumn('created_at').notNull().defaultNow();
export const updatedAt = () => tsColumn('updated_at').notNull().defaultNow();
