-- 0009 (PostgreSQL): a chat's tasks of any status, in order (the dashboard's chat page).
CREATE INDEX tasks_by_chat ON tasks(chat_id, id);
