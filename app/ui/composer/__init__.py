"""The composer: the message box, its attachments, its "@" and "/" and the message's options."""
